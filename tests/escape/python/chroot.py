# expect-result: seccomp
# attack: chroot("/tmp/jail") then chdir("..") x64 and chroot(".") to climb out of the root
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

os.makedirs('/tmp/jail', exist_ok=True)
print('calling', flush=True)
os.chroot('/tmp/jail')
print(MARK, 'chroot succeeded')
for i in range(64):
    os.chdir('..')
os.chroot('.')
print(MARK, 'escaped chroot, / holds', os.listdir('/'))

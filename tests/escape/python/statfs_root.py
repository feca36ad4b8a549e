# expect-result: ok
# attack: statfs("/") and fstatfs() of the root describe the host filesystem under the runtime tree
import os, shutil, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'
for what, call in (('statvfs /', lambda: os.statvfs('/')),
                   ('fstatvfs /', lambda: os.fstatvfs(os.open('/', os.O_RDONLY))),
                   ('disk_usage /', lambda: shutil.disk_usage('/'))):
    try:
        v = call()
        print(MARK, what, v)
    except OSError as e:
        print(what, 'denied:', e)

# expect-result: ok|seccomp
# attack: multiprocessing.Process whose child writes a file the parent then finds
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import multiprocessing
path = '/tmp/mp-%d' % os.getpid()


def child():
    with open(path, 'w') as f:
        f.write('child')


if __name__ == '__main__':
    try:
        p = multiprocessing.Process(target=child)
        print('calling', flush=True)
        p.start()
        p.join(5)
        print('exitcode', p.exitcode)
    except OSError as e:
        print('denied:', type(e).__name__, e)
    if os.path.exists(path):
        print(MARK, 'a child process ran')

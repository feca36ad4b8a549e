# os.nice: lower this run's own priority for a background computation (setpriority).
import os

before = os.getpriority(os.PRIO_PROCESS, 0)
after = os.nice(5)
assert after == before + 5, (before, after)
assert os.getpriority(os.PRIO_PROCESS, 0) == after
os.setpriority(os.PRIO_PROCESS, 0, after + 1)
assert os.getpriority(os.PRIO_PROCESS, 0) == after + 1
if os.geteuid() != 0:
    try:
        os.nice(-10)
    except PermissionError:
        pass
    else:
        raise AssertionError('an unprivileged process raised its own priority')
print('niceness', before, '->', after + 1)
print('CORPUS-OK os_nice')

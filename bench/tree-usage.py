# Runs a command and prints, on stderr, the CPU time and peak memory of every process it started,
# for bench/support.mjs. GNU time counts only descendants that were waited for, so a process that
# quarry starts in a group of its own and kills at exit (the SQLite process) went uncounted. This
# makes itself the subreaper of the tree (Linux prctl PR_SET_CHILD_SUBREAPER): orphans come back
# to it, and it waits for all of them before reading its children's resource usage.
import ctypes
import os
import resource
import sys

PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
status = 0
while True:
    try:
        done, code = os.wait()
    except ChildProcessError:
        break
    if done == pid:
        status = code
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"__RSS_KB={usage.ru_maxrss} __CPU_S={usage.ru_utime:.3f}+{usage.ru_stime:.3f}", file=sys.stderr)
sys.exit(os.waitstatus_to_exitcode(status))

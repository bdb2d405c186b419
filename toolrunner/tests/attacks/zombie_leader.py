# A snippet that hides a process from the executor's sweep (issue 22): a new session, a double
# fork, every catchable signal blocked, and a thread-group leader that exits alone (exit(2), not
# exit_group), so /proc/<pid>/stat shows a zombie while a thread of it beats into the file `beats`.
# Run by toolrunner/tests/test_sandbox_executor.py and, in a real session pod, SessionLeftoversIT.
import ctypes
import os
import signal
import threading
import time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        def beat():
            while True:
                with open('beats', 'a') as f:
                    f.write('.')
                time.sleep(0.05)
        threading.Thread(target=beat).start()
        open('hidden.pid', 'w').write(str(os.getpid()))
        ctypes.CDLL(None).syscall(60, 0)  # exit(2): only this thread, the leader; not exit_group
    os._exit(0)
time.sleep(1)
print(os.path.getsize('beats'))

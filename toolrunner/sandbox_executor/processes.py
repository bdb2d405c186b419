"""Finding and killing every process a snippet left behind.

Killing the interpreter's process group is not enough: a snippet can call setsid() to leave the
group, and fork twice so its daemon is no longer our descendant. Two measures close that:

* the executor is a child subreaper, so orphans of its descendants are re-parented to it and stay
  in its process tree (when it is PID 1 of the pod, they are re-parented to it anyway);
* when it is PID 1 and not root (the sandbox pod: uid 65532, nothing else runs there), every other
  process of its uid was started by the snippet, so all of them are killed too. Off the pod (tests,
  a developer's machine) that same sweep would kill unrelated processes of the user, so there it is
  limited to the executor's own descendants.

A process that hides behind a zombie thread-group leader (the leader called exit(2), a thread lives
on) is live too: the sweep looks at its threads, not at the leader alone (Linux), and in the pod SIGKILLs every
process /proc lists, zombies included (gVisor shows such a process as a zombie, or with a stat it
will not let be read).

A session keeps its interpreter between runs, so its sweeps spare that one process (`keep`): what a
session run started dies when the run ends, the interpreter and its variables live on.
"""
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def become_child_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"sandbox_executor: prctl(PR_SET_CHILD_SUBREAPER) failed: "
              f"{os.strerror(ctypes.get_errno())}", file=sys.stderr)


def kill_process_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def kill_leftovers(give_up_after_s=3.0, keep=None):
    """SIGKILL every leftover process until none is left (a forking snippet may race us).

    `keep`: a session's interpreter, spared (its children are not)."""
    deadline = time.monotonic() + give_up_after_s
    while True:
        pids = leftover_pids(keep)
        # In the pod, every other process listed is the snippet's: each gets SIGKILL on every round, zombies too (a
        # no-op for a dead one), because gVisor shows a thread group whose leader exited alone as a zombie or with an
        # unreadable stat while a thread of it lives on. Only live, readable ones are waited for.
        for pid in every_other_pid_in_the_pod(keep):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not pids or time.monotonic() > deadline:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        reap_children(keep)
        time.sleep(0.01)
    reap_children(keep)


def leftover_pids(keep=None):
    """Live processes (zombies excluded) that belong to the snippet; never this process, nor `keep`."""
    me = os.getpid()
    sweep_whole_uid = me == 1 and os.getuid() != 0
    children: dict[int, list[int]] = {}
    candidates = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat_file:
                stat = stat_file.read()
            uid = real_uid(pid)
        except (OSError, ValueError):
            continue  # exited meanwhile
        # The command name may hold spaces and parentheses: the fields follow the last ')'.
        state, ppid = stat[stat.rindex(b")") + 2:].split()[:2]
        if state == b"Z" and not has_live_thread(pid):
            continue
        children.setdefault(int(ppid), []).append(pid)
        if sweep_whole_uid and uid == os.getuid():
            candidates.add(pid)
    pending = list(children.get(me, []))
    while pending:
        pid = pending.pop()
        candidates.add(pid)
        pending.extend(children.get(pid, []))
    candidates.discard(me)
    candidates.discard(keep)
    return candidates


def every_other_pid_in_the_pod(keep=None):
    """Every process /proc lists but this one and `keep`, in the pod only (PID 1, not root: every
    other process there is the snippet's); elsewhere none."""
    me = os.getpid()
    if me != 1 or os.getuid() == 0:
        return []
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) not in (me, keep)]


def has_live_thread(pid):
    """Whether a process whose /proc entry shows a zombie still runs: its thread-group leader exited
    (exit(2), not exit_group) and another thread of it lives on. /proc/<pid>/stat shows the leader
    only; SIGKILL to the pid still ends the whole group."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue
        if stat[stat.rindex(b")") + 2:].split()[0] != b"Z":
            return True
    return False


def real_uid(pid):
    """The process's real uid, from /proc/<pid>/status.

    Not the owner of /proc/<pid>: that is root for a non-dumpable process (as this executor is), and
    a snippet could make its own processes non-dumpable to slip out of the uid sweep.
    """
    with open(f"/proc/{pid}/status", "rb") as status_file:
        for line in status_file:
            if line.startswith(b"Uid:"):
                return int(line.split()[1])
    raise ValueError(f"no Uid line for process {pid}")


def reap_children(keep=None):
    """Collect exit statuses of re-parented orphans. Without `keep`, call only when no live
    interpreter is a child; with it, every dead child but `keep` is collected (its status is its
    Popen's to read)."""
    if keep is not None:
        for pid in dead_children():
            if pid != keep:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        return
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def dead_children():
    """Zombie children of this process."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue
        state, ppid = stat[stat.rindex(b")") + 2:].split()[:2]
        if state == b"Z" and int(ppid) == me:
            found.append(int(name))
    return found

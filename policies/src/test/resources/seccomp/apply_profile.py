"""Load an OCI-format seccomp profile with libseccomp (Debian's python3-seccomp), then exec a program.

Usage: apply_profile.py PROFILE.json PROGRAM [ARGS...]
Names libseccomp does not know are skipped, as runc does.
"""
import json
import os
import sys

import seccomp

ARCHES = {"SCMP_ARCH_X86_64": seccomp.Arch.X86_64, "SCMP_ARCH_AARCH64": seccomp.Arch.AARCH64}


def main():
    profile = json.load(open(sys.argv[1]))
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    filt = seccomp.SyscallFilter(defaction=seccomp.ERRNO(profile.get("defaultErrnoRet", 1)))
    for name in profile["architectures"]:
        try:
            filt.add_arch(ARCHES[name])
        except RuntimeError:
            pass  # already present: the native architecture

    for rule in profile["syscalls"]:
        if rule["action"] == "SCMP_ACT_ALLOW":
            action = seccomp.ALLOW
        else:
            action = seccomp.ERRNO(rule.get("errnoRet", 1))
        args = []
        for a in rule.get("args", []):
            if a["op"] == "SCMP_CMP_MASKED_EQ":
                args.append(seccomp.Arg(a["index"], seccomp.MASKED_EQ, a["value"], a.get("valueTwo", 0)))
            elif a["op"] == "SCMP_CMP_EQ":
                args.append(seccomp.Arg(a["index"], seccomp.EQ, a["value"]))
            else:
                raise ValueError("unsupported op " + a["op"])
        for name in rule["names"]:
            try:
                filt.add_rule(action, name, *args)
            except (RuntimeError, ValueError):
                print("skipping unknown syscall " + name, file=sys.stderr)
    filt.load()
    os.execv(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    main()

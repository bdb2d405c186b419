"""Patches the gVisor module copy in argv[1] before build-k8s.sh builds runsc and its containerd shim.

Each patch is small, says why, and fails the build loudly when the code it expects has moved (a new GVISOR_VERSION
must then be looked at again, not silently built unpatched).
"""
import re
import sys


def patch(path, pattern, replacement, why):
    text = open(path).read()
    new, count = re.subn(pattern, replacement, text, count=1, flags=re.DOTALL)
    if count != 1:
        sys.exit(f"gVisor patch not applicable to {path} ({why}); review it for this GVISOR_VERSION")
    open(path, "w").write(new)


def ensure_import(path, name):
    text = open(path).read()
    if f'\t"{name}"\n' not in text:
        open(path, "w").write(text.replace("import (\n", f'import (\n\t"{name}"\n', 1))


def main(src):
    # 1. The shim lowers its own oom_score_adj to -999 and fails when it may not: nodes without CAP_SYS_RESOURCE
    #    (these VMs; the same reason containerd runs with restrict_oom_score_adj) would start no sandbox at all.
    #    containerd's own runc shim ignores that permission error; so does ours, and nothing else changes.
    manager = f"{src}/pkg/shim/v1/manager.go"
    patch(manager,
          r"if err := sys\.SetOOMScore\(([^)]*)\); err != nil \{",
          r"if err := sys.SetOOMScore(\1); err != nil && !errors.Is(err, os.ErrPermission) {",
          "shim oom_score_adj")
    ensure_import(manager, "errors")
    ensure_import(manager, "os")

    # 2. With --oci-seccomp runsc applies the pod's seccomp profile inside its kernel, but answers every SCMP_ACT_ERRNO
    #    rule with EPERM, ignoring the profile's errnoRet. containerd 2's RuntimeDefault profile answers clone3 with
    #    ENOSYS so that glibc falls back to clone; with EPERM instead, no thread can be started (pthread_create fails:
    #    Python's "can't start new thread"). runc honours errnoRet (OCI runtime-spec 1.0.2); so does runsc with this.
    seccomp = f"{src}/runsc/specutils/seccomp/seccomp.go"
    patch(seccomp,
          r"(\t\taction, err := convertAction\(syscall\.Action\)\n\t\tif err != nil \{\n\t\t\treturn nil, err\n\t\t\}\n)",
          r"\1\t\tif syscall.Action == specs.ActErrno && syscall.ErrnoRet != nil {\n"
          r"\t\t\taction = seccomp.ReturnError.Code(uint16(*syscall.ErrnoRet))\n\t\t}\n",
          "OCI seccomp errnoRet")
    patch(seccomp,
          r"(\tdefaultAction, err := convertAction\(s\.DefaultAction\)\n\tif err != nil \{\n.*?\n\t\}\n)",
          r"\1\tif s.DefaultAction == specs.ActErrno && s.DefaultErrnoRet != nil {\n"
          r"\t\tdefaultAction = seccomp.ReturnError.Code(uint16(*s.DefaultErrnoRet))\n\t}\n",
          "OCI seccomp defaultErrnoRet")


if __name__ == "__main__":
    main(sys.argv[1])

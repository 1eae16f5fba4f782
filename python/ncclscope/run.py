# SPDX-License-Identifier: Apache-2.0
"""python -m ncclscope.run [options] script.py [args...]
python -m ncclscope.run [options] -m module [args...]

Runs a script or module with ncclscope's Python tracing on (the settings
also come from NCCLSCOPE_PY_* variables; options win):

  --mode caller|functions   default caller (or NCCLSCOPE_PYTHON)
  --backend auto|monitoring|setprofile
  --include a,b   --exclude a,b   module prefixes (functions mode)
  --targets a,b   calls that set the caller (caller mode; +a,b adds to the defaults)
  --rate-limit N  calls per function per second (0: all)
  --no-c-calls    no C function events
  --depth N       frames per caller stack
  --session own|nccl
"""
import runpy
import sys


def main(argv=None):
    import ncclscope
    from ncclscope import _env

    argv = list(sys.argv[1:] if argv is None else argv)
    opts = _env.options()
    value_opts = {"--mode": "mode", "--backend": "backend", "--include": "include",
                  "--exclude": "exclude", "--targets": "targets", "--rate-limit": "rate_limit",
                  "--depth": "depth", "--session": "session"}
    module = None
    while argv and argv[0].startswith("-"):
        a = argv.pop(0)
        if a in ("-h", "--help"):
            print(__doc__)
            return 0
        if a == "--no-c-calls":
            opts["c_calls"] = False
        elif a == "-m" and argv:
            module = argv.pop(0)
            break
        elif a in value_opts and argv:
            v = argv.pop(0)
            k = value_opts[a]
            if k in ("include", "exclude"):
                opts[k] = [x for x in v.split(",") if x]
            elif k == "targets":
                extra = [x for x in v.lstrip("+").split(",") if x]
                opts[k] = list(ncclscope.DEFAULT_TARGETS) + extra if v.startswith("+") else extra
            elif k in ("rate_limit", "depth"):
                opts[k] = int(v)
            else:
                opts[k] = v
        else:
            sys.stderr.write("ncclscope.run: unknown option %s\n%s" % (a, __doc__))
            return 2
    if module is None and not argv:
        sys.stderr.write(__doc__)
        return 2
    ncclscope.trace(**opts)
    if module is not None:
        sys.argv = [module] + argv
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/bin/bash
# launch-<side>: the `linegate` of one tree. Its venv (python3.11 -m venv --without-pip) has two .pth files:
# 00-wt.pth naming the worktree, 10-main.pth naming the checkout's .venv site-packages (pydantic, fastapi, ...;
# the checkout's editable-install hook is in a .pth of that folder, which a path line does not run), so
# `gateway` and its _native .so (CMake-built into the worktree's gateway/) are the worktree's. -P: the
# current folder is not put on sys.path.
exec "$AB/venv-$SIDE/bin/python" -P -c 'import sys; from gateway.cli import main; sys.argv[0] = "linegate"; sys.exit(main())' "$@"

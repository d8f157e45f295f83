#!/bin/bash
# dr-early.sh DRDIR PROGRAM ARGS...: PROGRAM under DynamoRIO as hpcscope's native engine
# starts it, by DynamoRIO's early injection (drrun's default): the kernel runs
# libdynamorio.so, which loads PROGRAM (DYNAMORIO_EXE_PATH; argv[0] is the program's) and
# takes over from its first instruction, statically linked or not. The client and its
# arguments come from the caller's DYNAMORIO_OPTIONS (none: DynamoRIO alone).
# (bash for `exec -a`; it execs, so nothing of the shell stays around the program.)
set -eu
dr=$1
prog=$2
shift 2
export DYNAMORIO_RUNUNDER=1 DYNAMORIO_EXE_PATH="$prog"
export LD_LIBRARY_PATH="$dr/lib64/release:$dr/ext/lib64/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec -a "$prog" "$dr/lib64/release/libdynamorio.so" "$@"

#!/bin/bash
# quiet.sh CMD...: run CMD with every qemu process stopped (SIGSTOP) and the CPU lock held.
exec 9>$SCRATCH/cpu.lock; flock 9
pids=$(pgrep -f qemu-system-aarch64)
[ -n "$pids" ] && kill -STOP $pids
trap '[ -n "$pids" ] && kill -CONT $pids' EXIT
sleep 1
"$@"

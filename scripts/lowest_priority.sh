#!/usr/bin/env bash
# Run a command at the lowest CPU priority, in a session of its own: make test runs lint and the unit tests this way
# beside the chapters.
#
# Where Linux groups each session's processes for CPU fairness (autogroup, /proc/sys/kernel/sched_autogroup_enabled,
# on by default), a nice value only ranks a process among those of its own session, and every Jupyter kernel starts a
# session of its own (jupyter_client launches kernels with start_new_session=True). So `nice -n 19` alone left each
# chapter's kernel half the CPU while the tests ran beside it: the kernel's group and make's group shared the CPU
# equally. In a session of its own whose group is niced to 19 too, the tests get only the CPU a chapter leaves idle.
# Where there is no setsid or no autogroup, this is plain `nice -n 19`.
set -e
if [ "${1:-}" = --in-own-session ]; then
  shift
elif command -v setsid >/dev/null 2>&1; then
  exec setsid --wait "$0" --in-own-session "$@"
fi
echo 19 > /proc/self/autogroup 2>/dev/null || true
exec nice -n 19 "$@"

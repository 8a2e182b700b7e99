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
#
# The low priority is for the time the chapters run. Once they are done, `lowest_priority.sh --restore PIDFILE` puts
# the session named in PIDFILE (written by `lowest_priority.sh --pidfile PIDFILE COMMAND...`) back to nice 0, its
# running processes and its CPU group, so that lint and the unit tests do not crawl behind other work on a busy
# machine (beside two busy loops at nice 0 they got about 1% of a core each). Raising a priority needs root or an
# RLIMIT_NICE that allows it; where neither does, --restore changes nothing and says nothing.
set -e
if [ "${1:-}" = --restore ]; then
  sid=$(cat "$2" 2>/dev/null || true)
  [ -n "$sid" ] || exit 0
  for pid in $(ps -eo pid=,sid= | awk -v s="$sid" '$2 == s { print $1 }'); do
    echo 0 > "/proc/$pid/autogroup" 2>/dev/null || true
    renice -n 0 -p "$pid" >/dev/null 2>&1 || true
  done
  exit 0
fi
pidfile=
if [ "${1:-}" = --pidfile ]; then
  pidfile=$2
  shift 2
fi
if [ "${1:-}" = --in-own-session ]; then
  shift
elif command -v setsid >/dev/null 2>&1; then
  exec setsid --wait "$0" ${pidfile:+--pidfile "$pidfile"} --in-own-session "$@"
fi
[ -z "$pidfile" ] || ps -o sid= -p $$ | tr -d ' ' > "$pidfile"
echo 19 > /proc/self/autogroup 2>/dev/null || true
exec nice -n 19 "$@"

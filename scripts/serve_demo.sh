#!/usr/bin/env bash
# `make run`'s servers: the Celery worker and the web server side by side, stopped together.
#
# Ctrl+C (SIGINT to the whole process group) or SIGTERM stops both quietly: the handler clears the traps
# before it signals anything, so it runs once (a `kill 0` from a trap re-enters that trap, over and over),
# sends SIGTERM to the two servers alone and waits for them. If one server stops by itself, the other is
# stopped too and its exit status is returned.
#
# BIN (default .venv/bin) holds celery and python; PORT (default 8000) is the web server's port.
set -u
BIN=${BIN:-.venv/bin}
PORT=${PORT:-8000}

pids=()
stop() {
  trap '' INT TERM
  trap - EXIT
  kill -TERM "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

# A background job of a script ignores SIGINT, and the web server keeps it so; the worker installs its
# own handler, so it hears Ctrl+C as well: both then stop on the SIGTERM sent by stop.
"$BIN/celery" -A config worker --loglevel=WARNING --concurrency=1 --pool=solo &
pids+=($!)
"$BIN/python" manage.py runserver "127.0.0.1:$PORT" --noreload &
pids+=($!)

wait -n "${pids[@]}"
status=$?
stop
exit "$status"

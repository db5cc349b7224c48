#!/usr/bin/env bash
# `make run`'s servers: the Celery worker and the web server side by side, stopped together.
#
# Ctrl+C (SIGINT to the whole process group) or SIGTERM stops both quietly: the handler clears the traps
# before it signals anything, so it runs once (a `kill 0` from a trap re-enters that trap, over and over),
# sends SIGTERM to the two servers alone and waits for them. If one server stops by itself, the other is
# stopped too and its exit status is returned.
#
# Written for bash 3.2 (macOS's /bin/bash) as well as later ones: no `wait -n` (bash 5.1), which is why
# the script looks every half second whether both servers still run, and no arrays (an empty one is an
# unbound variable under `set -u` before bash 4.4).
#
# BIN (default .venv/bin) holds celery and python; PORT (default 8000) is the web server's port.
set -u
BIN=${BIN:-.venv/bin}
PORT=${PORT:-8000}

worker=
web=
stop() {
  trap '' INT TERM
  trap - EXIT
  # unquoted on purpose: a server not started yet is an empty word, which vanishes
  kill -TERM $worker $web 2>/dev/null
  wait $worker $web 2>/dev/null
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

# A background job of a script ignores SIGINT, and the web server keeps it so; the worker installs its
# own handler, so it hears Ctrl+C as well: both then stop on the SIGTERM sent by stop.
"$BIN/celery" -A config worker --loglevel=WARNING --concurrency=1 --pool=solo &
worker=$!
"$BIN/python" manage.py runserver "127.0.0.1:$PORT" --noreload &
web=$!

# bash reaps a server that stops and keeps its status for `wait`, so `kill -0` fails from then on.
while kill -0 "$worker" 2>/dev/null && kill -0 "$web" 2>/dev/null; do
  sleep 0.5
done
if kill -0 "$worker" 2>/dev/null; then
  wait "$web"
else
  wait "$worker"
fi
status=$?
stop
exit "$status"

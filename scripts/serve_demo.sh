#!/usr/bin/env bash
# `make run`'s servers: the Celery worker and the web server side by side, stopped together.
#
# Ctrl+C (SIGINT to the whole process group) or SIGTERM stops both quietly: the handler clears the traps
# before it signals anything, so it runs once (a `kill 0` from a trap re-enters that trap, over and over),
# sends SIGTERM to the servers alone (after Ctrl+C, to the worker only if it has not stopped by itself
# within 10 s) and waits for them. If one server stops by itself, the other is
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
# Without Redis, the two servers share a cache on files: a page counts what a job in the worker changed at
# once, not once its own local-memory copy expires (config/settings.py, apps/core/generations.py).
if [ -z "${REDIS_URL:-}" ]; then
  export CACHE_DIR="${CACHE_DIR:-var/cache}"
fi

worker=
web=
stop() {
  trap '' INT TERM
  trap - EXIT
  if [ "${1:-}" = ctrl-c ] && [ -n "$worker" ]; then
    # The worker heard Ctrl+C itself and is shutting down warm: a SIGTERM now would only make it say so
    # twice. The web server ignores SIGINT: stop it, and give the worker 10 s before asking again.
    kill -TERM $web 2>/dev/null
    tries=0
    while kill -0 "$worker" 2>/dev/null && [ "$tries" -lt 20 ]; do
      sleep 0.5
      tries=$((tries + 1))
    done
  fi
  # unquoted on purpose: a server not started yet is an empty word, which vanishes
  kill -TERM $worker $web 2>/dev/null
  wait $worker $web 2>/dev/null
}
trap 'stop ctrl-c; exit 0' INT
trap 'stop; exit 0' TERM
trap stop EXIT

# A background job of a script ignores SIGINT, and the web server keeps it so; the worker installs its
# own handler, so it hears Ctrl+C as well and stops by itself; the web server stops on stop's SIGTERM.
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

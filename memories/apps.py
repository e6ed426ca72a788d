from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        # Failed and successful logins are counted for the lock-out (memories.logins).
        from memories import logins  # noqa: F401

from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        from django.contrib.auth.models import User
        from django.db.models.signals import post_delete, post_save
        from rest_framework.authtoken.models import Token

        # Failed and successful logins are counted for the lock-out (memories.logins).
        from memories import logins  # noqa: F401
        from memories.models import AccountPolicy
        from memoryhub.authentication import on_token_or_account_change

        # Every worker forgets the API tokens it holds (with their accounts' policies) when a token, an
        # account or a policy changes (memoryhub.authentication).
        for model in (Token, User, AccountPolicy):
            post_save.connect(
                on_token_or_account_change, sender=model, dispatch_uid=f"tokens-changed-save-{model.__name__}"
            )
            post_delete.connect(
                on_token_or_account_change, sender=model, dispatch_uid=f"tokens-changed-delete-{model.__name__}"
            )

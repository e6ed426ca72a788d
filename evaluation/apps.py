from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        # memories never imports evaluation; the tool's evaluate action is plugged in from here.
        from evaluation.services import tool_evaluate
        from memories import tool

        tool.evaluate_hook = tool_evaluate

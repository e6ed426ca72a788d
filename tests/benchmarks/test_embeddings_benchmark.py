"""`manage.py benchmark_embeddings` measures with the real local model and leaves nothing behind."""

import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from memories.embeddings.local import MODEL_NAME
from memories.models import EntryEmbedding, MemoryEntry


@pytest.mark.slow
@pytest.mark.django_db
def test_it_reports_write_cost_throughput_and_query_time_then_removes_its_account(
    settings, capsys: pytest.CaptureFixture
) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "local"
    call_command(
        "benchmark_embeddings", "--per-user", "60", "--writes", "3", "--rounds", "1", "--queries", "8", "--json"
    )
    report = json.loads(capsys.readouterr().out)
    assert report["provider"] == MODEL_NAME
    assert report["embedded"] == 60 and report["per_user"] == 60
    assert report["embed_per_second"] > 0 and report["write_ratio"] > 0
    assert 0 < report["query_cached_p50_ms"] <= report["query_cached_p95_ms"]
    assert not User.objects.filter(username__startswith="memoryhub-embeddings-bench-").exists()
    assert not MemoryEntry.objects.exists() and not EntryEmbedding.objects.exists()


@pytest.mark.django_db
def test_it_refuses_with_embeddings_off(settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "off"
    with pytest.raises(CommandError, match="MEMORYHUB_EMBEDDINGS is off"):
        call_command("benchmark_embeddings", "--per-user", "5")

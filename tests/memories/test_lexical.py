"""Search by words: what an agent sees when it asks in words rather than by an exact substring.

Every test here runs on SQLite and, with DATABASE_URL set, on PostgreSQL: the folding and the
matching rule are the same on both.
"""

import importlib
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memories import search, selectors, services
from memories.models import MemoryEntry
from memories.search import dictionary, hybrid, lexical
from memories.search.lexical import holds_whole
from memories.services.imports import ImportRecord, entries_import
from memoryhub import api


def _put(owner, key: str, value: str, uid: str = "alice") -> None:
    services.entry_put(owner=owner, uid=uid, key=key, value=value)


def _found_keys(owner, query_text: str, uid: str = "alice", **options) -> list[str]:
    return [entry.key for entry in selectors.entry_find(owner=owner, uid=uid, query_text=query_text, **options)]


def _import(owner, uid: str, values: dict[str, str]) -> None:
    records = [ImportRecord(uid=uid, key=key, value=value, kind="fact", meta={}) for key, value in values.items()]
    entries_import(owner=owner, records=records)


def test_an_entry_holding_any_of_the_words_matches(owner):
    _put(owner, "language", "prefers Python, writes Rust on weekends")
    _put(owner, "editor", "uses vim")
    _put(owner, "drink", "green tea")
    assert _found_keys(owner, "python rust") == ["language"]
    assert set(_found_keys(owner, "rust vim")) == {"language", "editor"}


def test_what_is_left_of_a_contraction_or_a_possessive_matches_nothing_by_itself(owner):
    _put(owner, "job", "works as a nurse")
    _put(owner, "pet", "has a dog named Rex, she's fond of him")
    _put(owner, "kids", "two kids: Ana and Leo")
    # "what's" and "kid's" fold to "what s" and "kid s": the "s" is no word of the question.
    assert _found_keys(owner, "what's her occupation") == []
    [kids] = selectors.entry_find(owner=owner, uid="alice", query_text="kid's")
    assert (kids.key, kids.matched_terms) == ("kids", ("kid",))


def test_a_short_word_or_a_typos_variant_is_named_matched_only_where_it_is_a_whole_word(owner):
    _put(owner, "support", "call Whitfield for email or wifi trouble")
    _put(owner, "meals", "a plan for the meals of the week")
    _put(owner, "trip", "planning a trip to Rome")
    # "e" and "plan" (what "plam" most likely meant) match whole words only: "email" holds no "e" as the search
    # reads it, "planning" no "plan".
    [support] = selectors.entry_find(owner=owner, uid="alice", query_text="e-mail")
    assert (support.key, support.matched_terms) == ("support", ("mail",))
    found = {
        entry.key: entry.matched_terms
        for entry in selectors.entry_find(owner=owner, uid="alice", query_text="plam rome")
    }
    assert found == {"meals": ("plan",), "trip": ("rome",)}


@pytest.mark.parametrize(
    "words",
    [
        [chr(0x4E00 + number) for number in range(500)],  # 500 one-character words in 999 characters
        [f"w{number:03d}" for number in range(200)],  # 200 words of four characters
    ],
)
def test_a_query_of_hundreds_of_words_within_the_limit_is_answered(owner, words):
    _put(owner, "first", f"holds {words[0]} here")
    _put(owner, "last", f"holds {words[-1]} here")
    query_text = " ".join(words)
    assert len(query_text) <= 1000

    found = _found_keys(owner, query_text)

    assert "first" in found


def test_an_entry_holding_more_of_the_words_ranks_first(owner):
    _put(owner, "both", "writes rust and python")
    _put(owner, "rust", "writes rust at work")
    _put(owner, "python", "writes python scripts")
    assert _found_keys(owner, "python rust")[0] == "both"


def test_a_rare_word_outranks_a_common_one(owner):
    _import(owner, "alice", {f"note{number}": f"drinks coffee, note {number}" for number in range(30)})
    _put(owner, "bird", "saw a quetzal in the forest")
    found = _found_keys(owner, "coffee quetzal")
    assert found[0] == "bird"
    assert len(found) == 31


def test_a_word_in_the_key_ranks_above_the_same_word_in_the_value(owner):
    _put(owner, "notes", "mentioned the editor once, among many other words in a long value")
    _put(owner, "editor", "vim")
    assert _found_keys(owner, "editor") == ["editor", "notes"]


def test_words_in_double_quotes_match_as_one_phrase(owner):
    _put(owner, "language", "prefers python, writes rust on weekends")
    _put(owner, "other", "rust writes nothing")
    assert _found_keys(owner, '"writes rust"') == ["language"]
    assert set(_found_keys(owner, "writes rust")) == {"language", "other"}


def test_a_word_inside_a_longer_word_still_matches(owner):
    _put(owner, "editor", "uses neovim daily")
    _put(owner, "language", "javascript and typescript")
    assert _found_keys(owner, "vim") == ["editor"]
    assert _found_keys(owner, "script java") == ["language"]


def test_question_words_do_not_make_every_entry_a_match(owner):
    _put(owner, "editor", "she uses vim, what does it matter")
    _put(owner, "food", "she does not eat peanuts")
    _put(owner, "drink", "what she drinks is tea")
    assert _found_keys(owner, "which editor does she use") == ["editor"]
    assert _found_keys(owner, "what food can she not eat") == ["food"]


def test_a_query_made_only_of_question_words_finds_that_phrase(owner):
    _put(owner, "quote", "she asked: what does she want?")
    _put(owner, "food", "she does not eat peanuts")
    assert _found_keys(owner, "what does she") == ["quote"]
    assert set(_found_keys(owner, "she")) == {"quote", "food"}


@pytest.mark.parametrize("query_text", ["cafe", "CAFÉ", "Café", "café", "CAFE"])
def test_case_and_accents_fold_the_same_way_on_every_database(owner, query_text):
    _put(owner, "drink", "Un CAFÉ au lait")
    _put(owner, "Crème brûlée", "dessert")
    _put(owner, "other", "tea")
    assert _found_keys(owner, query_text) == ["drink"]
    assert _found_keys(owner, "creme BRULEE") == ["Crème brûlée"]
    assert _found_keys(owner, "NAÏVE") == []


def test_folding_strips_accents_and_case_of_every_script():
    assert search.query_parse("Ærøskøbing ÉTÉ İstanbul straße").words == ("aeroskobing", "ete", "istanbul", "strasse")


def test_letters_that_hold_their_accent_are_found_by_their_base_letters(owner):
    _put(owner, "grandmother", "born in Łódź, later lived in Wrocław")
    _put(owner, "friend", "Søren from Tromsø")
    _put(owner, "band", "listens to Ænigma")
    _put(owner, "city", "visited Lodz in May")
    assert sorted(_found_keys(owner, "Lodz")) == ["city", "grandmother"]
    assert sorted(_found_keys(owner, "ŁÓDŹ")) == ["city", "grandmother"]
    assert _found_keys(owner, "wroclaw") == ["grandmother"]
    assert _found_keys(owner, "soren tromso") == ["friend"]
    assert _found_keys(owner, "aenigma") == ["band"]


@pytest.mark.django_db(transaction=True)
def test_the_migration_folds_again_the_entries_folded_before_and_no_other(owner):
    migration = importlib.import_module("memories.migrations.0025_fold_letters_without_marks")
    _put(owner, "grandmother", "born in Łódź")
    _put(owner, "energy", "wind farm by Ǿrsted")
    _put(owner, "drink", "Un CAFÉ au lait")
    # As the fold before 0025 left them: "ł" kept, and "Ǿ" (an "ø" with an accent) as "ø".
    MemoryEntry.objects.filter(key="grandmother").update(value_folded="born in łodz")
    MemoryEntry.objects.filter(key="energy").update(value_folded="wind farm by ørsted")
    # An entry holding none of those letters is neither read nor written: what its columns hold stays.
    MemoryEntry.objects.filter(key="drink").update(value_folded="left as it was")
    assert _found_keys(owner, "lodz") == []

    with connection.schema_editor() as editor:
        migration.fold_again(None, editor)

    assert _found_keys(owner, "lodz") == ["grandmother"]
    assert _found_keys(owner, "orsted") == ["energy"]
    assert MemoryEntry.objects.get(key="grandmother").value_folded == "born in lodz"
    assert MemoryEntry.objects.get(key="drink").value_folded == "left as it was"


@pytest.mark.slow
def test_another_accounts_data_never_changes_which_of_my_entries_match(owner, stranger):
    _put(owner, "drink", "coffee, black")
    _put(owner, "editor", "uses vim")
    _put(owner, "food", "the spicy kind")
    queries = ["coffee", "vim coffee", "the", "what does she eat", "spicy black"]
    before = {query: sorted(_found_keys(owner, query)) for query in queries}
    # Far more matches in the hub than any threshold: the same words, thousands of times.
    _import(stranger, "alice", {f"k{number}": f"coffee the vim spicy black {number}" for number in range(2500)})
    after = {query: sorted(_found_keys(owner, query)) for query in queries}
    assert after == before


def test_the_api_gives_each_result_its_score_and_matched_words_for_a_query_only(owner, owner_api):
    _put(owner, "language", "prefers Python, writes Rust")
    _put(owner, "editor", "uses vim")
    found = owner_api.get("/api/v1/users/alice/memories", {"q": "rust python"}).json()
    assert found["order"] == "relevance"
    assert found["count"] == 1 and found["count_exact"] is True
    [result] = found["results"]
    assert result["score"] > 0
    assert result["matched_terms"] == ["rust", "python"]
    listed = owner_api.get("/api/v1/users/alice/memories").json()
    assert "score" not in listed["results"][0]
    assert listed["order"] == "newest"


@pytest.mark.slow
def test_the_count_is_exact_up_to_a_thousand_and_says_so_beyond(owner, owner_api):
    _import(owner, "alice", {f"k{number:04d}": f"drinks coffee {number}" for number in range(1005)})
    _import(owner, "bob", {f"k{number:04d}": f"drinks coffee {number}" for number in range(1000)})
    many = owner_api.get("/api/v1/users/alice/memories", {"q": "coffee", "page_size": 10}).json()
    assert (many["count"], many["count_exact"]) == (1001, False)
    exact = owner_api.get("/api/v1/users/bob/memories", {"q": "coffee", "page_size": 10}).json()
    assert (exact["count"], exact["count_exact"]) == (1000, True)
    listed = owner_api.get("/api/v1/users/alice/memories", {"page_size": 10}).json()
    assert (listed["count"], listed["count_exact"]) == (1001, False)
    # Fewer than a thousand hold the word whole; with those that hold it inside a longer one, more match.
    inside = {f"k{number:04d}": f"drinks coffee {number}" for number in range(995)}
    inside |= {f"house{number:02d}": f"a coffeehouse {number}" for number in range(10)}
    _import(owner, "carol", inside)
    mixed = owner_api.get("/api/v1/users/carol/memories", {"q": "coffee", "page_size": 10}).json()
    assert (mixed["count"], mixed["count_exact"]) == (1001, False)


@pytest.mark.parametrize("looked_past", [1000, 2])
def test_a_words_count_leaves_out_the_holders_that_expired(owner, owner_api, monkeypatch, looked_past):
    """More hold the word than are ranked, and more than the count's limit, but three have expired: the seven
    left are counted exactly (the hub's expired entries looked past, or, past EXPIRED_LOOKED_PAST, each read)."""
    monkeypatch.setattr(lexical, "RANK_CAP", 5)
    for counting in (lexical, hybrid):
        monkeypatch.setattr(counting, "COUNT_LIMIT", 8)
    monkeypatch.setattr(api, "PAGE_COUNT_LIMIT", 8)
    monkeypatch.setattr(lexical, "EXPIRED_LOOKED_PAST", looked_past)
    _import(owner, "alice", {f"k{number}": f"drinks coffee {number}" for number in range(10)})
    _import(owner, "bob", {"k0": "drinks coffee"})
    past = timezone.now() - timedelta(seconds=1)
    MemoryEntry.objects.filter(owner=owner, uid="alice", key__in=["k1", "k4", "k7"]).update(expires=past)
    page = owner_api.get("/api/v1/users/alice/memories", {"q": "coffee", "page_size": 3}).json()
    assert (page["count"], page["count_exact"]) == (7, True)
    # The owner's include_expired counts all ten: more than the limit.
    every = owner_api.get("/api/v1/users/alice/memories", {"q": "coffee", "page_size": 3, "include_expired": 1})
    assert (every.json()["count"], every.json()["count_exact"]) == (9, False)
    # Another user's expired entries do not hide any of alice's.
    MemoryEntry.objects.filter(owner=owner, uid="alice").update(expires=None)
    MemoryEntry.objects.filter(owner=owner, uid="bob").update(expires=past)
    page = owner_api.get("/api/v1/users/alice/memories", {"q": "coffee", "page_size": 3}).json()
    assert (page["count"], page["count_exact"]) == (9, False)


def _all_pages(owner_api, params: dict) -> tuple[list[str], list[str]]:
    keys, orders = [], []
    page = owner_api.get("/api/v1/users/alice/memories", params).json()
    while True:
        keys += [result["key"] for result in page["results"]]
        orders.append(page["order"])
        if page["next"] is None:
            return keys, orders
        page = owner_api.get(page["next"]).json()


def test_paging_reaches_every_match_once_past_the_ranked_candidates(owner, owner_api, monkeypatch):
    monkeypatch.setattr(lexical, "RANK_CAP", 7)
    values = {f"word{number:02d}": f"likes tea {number}" for number in range(20)}
    # Matches that hold "tea" only inside a longer word: never candidates, still results.
    values |= {f"inside{number:02d}": f"a steamboat {number}" for number in range(6)}
    values |= {f"other{number:02d}": f"coffee {number}" for number in range(5)}
    _import(owner, "alice", values)
    keys, orders = _all_pages(owner_api, {"q": "tea", "page_size": 4})
    assert sorted(keys) == sorted(key for key in values if not key.startswith("other"))
    assert len(keys) == len(set(keys))
    assert orders[0] == "relevance" and orders[-1] == "newest"


@pytest.mark.slow
def test_paging_past_the_count_limit_reaches_every_match(owner, owner_api):
    _import(owner, "alice", {f"k{number:04d}": f"drinks coffee {number}" for number in range(1010)})
    keys, orders = _all_pages(owner_api, {"q": "coffee", "page_size": 500})
    assert len(keys) == len(set(keys)) == 1010
    assert orders == ["relevance", "newest", "newest"]


def test_past_the_count_limit_the_rest_still_holds_every_match_inside_a_longer_word(owner, owner_api):
    values = {f"k{number:04d}": f"drinks coffee {number}" for number in range(1003)}
    values |= {f"inside{number}": f"coffeehouse visit {number}" for number in range(4)}
    values |= {f"other{number}": f"tea {number}" for number in range(3)}
    _import(owner, "alice", values)
    keys, orders = _all_pages(owner_api, {"q": "coffee", "page_size": 300})
    assert sorted(keys) == sorted(key for key in values if not key.startswith("other"))
    assert len(keys) == len(set(keys))
    assert orders == ["relevance", "newest", "newest", "newest"]


def test_a_page_past_the_last_match_is_a_404(owner, owner_api):
    _put(owner, "drink", "coffee")
    assert owner_api.get("/api/v1/users/alice/memories", {"q": "coffee", "page": 2}).status_code == 404


def test_the_tool_and_the_api_rank_alike(owner, owner_api):
    _put(owner, "both", "writes rust and python", uid="default")
    _put(owner, "rust", "writes rust at work, every single day of the week", uid="default")
    _put(owner, "python", "python", uid="default")
    api = owner_api.get("/api/v1/users/default/memories", {"q": "python rust"}).json()
    tool = owner_api.post("/api/v1/tool", {"action": "query", "query": "python rust"}, format="json").json()
    assert [result["key"] for result in tool["results"]] == [result["key"] for result in api["results"]]


def test_lexical_candidates_name_their_score_and_matched_terms(owner):
    _put(owner, "language", "prefers python, writes rust")
    _put(owner, "editor", "vim")
    [candidate] = search.lexical_candidates(owner_id=owner.pk, uid="alice", query_text="Rust compilers")
    assert candidate.matched_terms == ("rust",)
    assert candidate.score > 0
    # "editors" is held by no entry: "editor", one letter away, is what it names.
    candidates = search.lexical_candidates(owner_id=owner.pk, uid="alice", query_text="Rust editors")
    assert {candidate.matched_terms for candidate in candidates} == {("rust",), ("editor",)}


LETTERS = "abcABCéÉxyz"


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(st.text(alphabet=LETTERS + " -'", min_size=0, max_size=30), min_size=1, max_size=8),
    word=st.text(alphabet=LETTERS, min_size=1, max_size=6),
)
def test_every_entry_the_substring_scan_finds_for_a_word_is_found(owner, values, word):
    services.user_forget(owner=owner, uid="prop")
    for number, value in enumerate(values):
        services.entry_put(owner=owner, uid="prop", key=f"k{number}", value=value or "-")
    scanned = set(_found_keys(owner, word, uid="prop", match=selectors.MATCH_SUBSTRING))
    found = _found_keys(owner, word, uid="prop")
    assert scanned <= set(found)
    assert len(found) == len(set(found))


def test_the_dashboard_search_ranks_as_the_api_does(owner, owner_client):
    _put(owner, "rust", "writes rust at work, every single day of the week")
    _put(owner, "both", "writes rust and python")
    page = owner_client.get("/user/", {"uid": "alice", "q": "python rust"}).content.decode()
    assert page.index("writes rust and python") < page.index("writes rust at work")
    assert "1–2 shown of 2 matching" in page and "best match first" in page


@pytest.mark.slow
def test_the_dashboard_says_how_many_are_shown_and_whether_more_follow(owner, owner_client, settings):
    settings.MEMORYHUB_PAGE_SIZE = 50
    _import(owner, "alice", {f"k{number:04d}": f"drinks coffee {number}" for number in range(1003)})
    first = owner_client.get("/user/", {"uid": "alice", "q": "coffee"}).content.decode()
    assert "1–50 shown, more matching" in first
    assert "Page 1</span>" in first and 'rel="next"' in first
    listed = owner_client.get("/user/", {"uid": "alice", "page": 3}).content.decode()
    assert "101–150 shown of 1003 memories." in listed
    for page_number in (21, 30):  # the last page, and one past it (which shows the last)
        last = owner_client.get("/user/", {"uid": "alice", "q": "coffee", "page": page_number}).content.decode()
        assert "1001–1003 shown of 1003 matching" in last and 'rel="next"' not in last
        listed = owner_client.get("/user/", {"uid": "alice", "page": page_number}).content.decode()
        assert "1001–1003 shown of 1003 memories." in listed and 'rel="next"' not in listed


def test_a_misspelt_word_finds_the_word_one_letter_away_ranked(owner, owner_api):
    _put(owner, "drink", "takes her coffee black")
    _put(owner, "running", "training for a marathon in May")
    _put(owner, "editor", "uses vim")
    assert _found_keys(owner, "how does she like her cofee") == ["drink"]
    assert _found_keys(owner, "is she trainig for a marathn") == ["running"]
    assert _found_keys(owner, "wich editr does she use") == ["editor"]
    found = owner_api.get("/api/v1/users/alice/memories", {"q": "cofee"}).json()
    assert found["order"] == "relevance" and found["count"] == 1
    [result] = found["results"]
    assert result["key"] == "drink" and result["score"] > 0 and result["matched_terms"] == ["coffee"]


def test_a_word_spelt_right_is_not_taken_for_a_typo_of_the_users_words(owner):
    _put(owner, "meals", "a plan for the meals of the week")
    _put(owner, "pocket-money", "we pay the kids 5 pounds on Fridays")
    _put(owner, "podcast", "likes a bike podcast on Sundays")
    _put(owner, "drink", "takes her coffee black")
    # "play" and "tennis" are words as written: no entry holds them, and none is found for "plan" or "pay".
    assert _found_keys(owner, "does she play tennis") == []
    # "like" is held by "likes" (found, unranked); "bike" is not sought for it. Coffee is the one ranked.
    assert _found_keys(owner, "how does she like her coffee")[0] == "drink"
    # A word that is no word ("wich", "edtor") is still sought among the user's words one letter away, and a plural
    # as its singular.
    _put(owner, "editor", "uses vim")
    assert _found_keys(owner, "wich edtor") == ["editor"]
    assert _found_keys(owner, "editors") == ["editor"]


def test_the_dictionary_holds_words_as_written_and_no_misspellings():
    known = dictionary.known_words()
    assert {"tennis", "play", "like", "coffee", "editor", "medications"} <= known
    assert not {"wich", "edtor", "pyhton", "cofee", "medicatoins", "##ing", "[CLS]"} & known
    assert len(known) > 20_000


def test_a_word_someone_holds_is_not_taken_for_its_neighbours(owner):
    _put(owner, "drink", "takes her coffee black")
    _put(owner, "sweet", "likes toffee")
    assert _found_keys(owner, "coffee") == ["drink"]


def test_a_misspelt_word_is_corrected_from_my_own_entries_only(owner, stranger):
    _put(owner, "drink", "green tea")
    _import(stranger, "alice", {"drink": "takes her coffee black"})
    assert _found_keys(owner, "cofee") == []
    _put(owner, "breakfast", "coffee and toast")
    assert _found_keys(owner, "cofee") == ["breakfast"]


def test_a_rare_word_outranks_a_common_one_after_the_statistics_are_made(owner):
    # On PostgreSQL a common word's weight is then read from the planner's statistics, not counted.
    _import(owner, "alice", {f"note{number}": f"drinks coffee, note {number}" for number in range(300)})
    _put(owner, "bird", "saw a quetzal in the forest, with coffee")
    services.search_statistics_refresh()
    try:
        found = _found_keys(owner, "coffee quetzal")
    finally:
        # The statistics go with the test's transaction: later tests must not weigh words by them.
        lexical.word_statistics_clear()
    assert found[0] == "bird"
    assert len(found) == 301


def test_the_search_indexes_pending_lists_stay_small_as_entries_are_written(owner):
    # GIN's fast update keeps new entries in a pending list that every search through the index reads in
    # full; PostgreSQL's search indexes merge it once it holds 256 kB (migration 0019), not 4 MB.
    if connection.vendor != "postgresql":
        return
    words = [f"{letters}{number}" for number, letters in enumerate(["tea", "vim", "jazz", "sea", "rust"] * 12)]
    operations = [
        services.BatchOperation(
            op="put", key=f"note-{number}", value=" ".join(words[number % 7 :] + words[: number % 7])
        )
        for number in range(300)
    ]
    for start in range(0, len(operations), 100):
        services.entries_batch(owner=owner, uid="alice", operations=operations[start : start + 100], actor=owner)
    with connection.cursor() as cursor:
        for index in lexical.POSTGRES_SEARCH_INDEXES:
            cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [index])
            # pages of 8 kB
            assert cursor.fetchone()[0] <= 256 // 8, index


def test_a_search_reads_the_users_own_rows_of_the_postgresql_indexes(owner, stranger):
    # Migration 0020: the words and substring indexes lead with (owner, uid), so a search looks a word up among
    # the user's rows of an index alone, instead of among every row of the hub holding it, intersected with
    # the user's rows of another index.
    if connection.vendor != "postgresql":
        return
    records = [
        ImportRecord(uid="alice", key=f"note-{number}", value=f"drinks coffee at {number}") for number in range(40)
    ]
    # Enough of the user's own entries that reading all of them costs more than reading the index's few.
    records += [ImportRecord(uid="alice", key=f"n{number}", value=f"filler {number}") for number in range(3000)]
    entries_import(owner=owner, records=records)
    entries_import(owner=owner, records=[ImportRecord(uid="bob", key="drink", value="coffee")])
    entries_import(owner=stranger, records=[ImportRecord(uid="alice", key="drink", value="coffee")])
    matches = lexical.LexicalMatches(owner_id=owner.pk, uid="alice", kind=None, query_text="coffee cafe")
    with CaptureQueriesContext(connection) as captured:
        assert len(matches[0:50]) == 40
        assert matches.count() == 40
    # The ranked candidates: each word's hits among the user's entries. (The count's substrings read the same
    # way on a hub's table; on one this small, the planner rightly reads the owner's rows instead.)
    statements = [query["sql"] for query in captured.captured_queries if "ts_rank" in query["sql"]]
    assert statements
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {lexical.ENTRY_TABLE}")
        # A table this small is read whole faster than through any index (a hub's is not): which index answers is
        # what is asked here.
        cursor.execute("SET LOCAL enable_seqscan = off")
        for sql in statements:
            cursor.execute(f"EXPLAIN {sql}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "BitmapAnd" not in plan and "owner_uid_key" not in plan, plan
            user_index_reads = [
                line
                for line in plan.splitlines()
                if "Index Cond" in line and f"owner_id = {owner.pk}" in line and "uid)::text = 'alice'" in line
            ]
            assert user_index_reads and all("folded" in line for line in user_index_reads), plan


def test_a_search_asked_again_and_again_is_planned_once_on_postgresql(owner):
    # Server-side binding (settings.DB_SERVER_SIDE_BINDING, on unless turned off): psycopg prepares a statement its
    # connection has run five times, and the server then plans it once instead of at every search.
    from django.conf import settings

    if connection.vendor != "postgresql":
        return
    _import(owner, "alice", {"drink": "black coffee", "sport": "runs marathons"})
    for _ in range(6):
        assert [
            entry.key
            for entry in lexical.LexicalMatches(owner_id=owner.pk, uid="alice", kind=None, query_text="coffee")[0:10]
        ] == ["drink"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [statement for (statement,) in cursor.fetchall()]
    assert any("ts_rank" in statement for statement in prepared) == settings.DB_SERVER_SIDE_BINDING, prepared


@pytest.mark.slow
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's two ways of gathering a word's holders")
def test_a_common_word_read_newest_first_finds_what_its_index_finds(owner, owner_api, monkeypatch):
    """A word the statistics call common is gathered by reading the user's entries newest first; a rare one
    through the GIN index. Both give the same candidates, ranking and count."""
    values = {}
    for number in range(3300):
        words = ["python"] * (1 + number % 2) if number % 3 == 0 else ["notes"]
        values[f"k{number:04d}"] = " ".join([*words, "about", "item", str(number), *["filler"] * (number % 5)])
    values |= {f"rare{number}": f"zanzibar trip {number}" for number in range(3)}
    _import(owner, "alice", values)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memoryentry")
    lexical.word_statistics_clear()
    statistics = lexical._word_statistics_postgres()
    assert statistics is not None
    assert (statistics.holding("python") or 0) >= lexical.COMMON_WORD_SHARE * statistics.documents
    assert (statistics.holding("zanzibar") or 0) < lexical.COMMON_WORD_SHARE * statistics.documents

    def pages() -> list[dict]:
        return [
            owner_api.get("/api/v1/users/alice/memories", {"q": query, "page_size": 30}).json()
            for query in ("python", "zanzibar", "python zanzibar", "notes item")
        ]

    def shown(page: dict) -> tuple:
        results = [(result["key"], result["score"], result["matched_terms"]) for result in page["results"]]
        return page["count"], page["count_exact"], page["order"], results

    read_newest_first = [shown(page) for page in pages()]
    monkeypatch.setattr(lexical, "COMMON_WORD_SHARE", 2.0)  # no word is common: every one through the index
    through_the_index = [shown(page) for page in pages()]
    assert read_newest_first == through_the_index
    python, zanzibar, both, notes = read_newest_first
    # 1,100 hold python, more than the count's limit: counted as past it.
    assert python[:2] == (1001, False) and len(python[3]) == 30
    assert zanzibar[:2] == (3, True)
    assert {key for key, *_ in both[3][:3]} == {"rare0", "rare1", "rare2"}
    assert notes[:2] == (1001, False)


@pytest.mark.parametrize(
    ("term", "key", "value", "held"),
    [
        ("ink", "note", "drinks coffee", False),
        ("coffee", "note", "drinks coffee, daily", True),
        ("art class", "note", "smart classes on monday", False),
        ("art class", "note", "an art class on monday", True),
        ("editor", "editor", "vim", True),
    ],
)
def test_a_term_is_held_whole_only_as_whole_words_in_a_row(term, key, value, held):
    assert holds_whole(term, key, value) is held

"""The mix in tokens, temperature shares, epoch caps and token counters, on hand-built data."""

import math
import pickle
from pathlib import Path

import pyarrow as pa
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from corpus_platform.base.generations import TextSource, generation_path
from corpus_platform.base.shards import read_shard, write_parquet
from corpus_platform.config import ConfigError, parse_config
from corpus_platform.kernels.mixing import tokens as tokens_module
from corpus_platform.kernels.mixing.mix import (
    TOKENS,
    draw_shard,
    drawn_units,
    source_units,
)
from corpus_platform.kernels.mixing.plan import MixError, plan_mix, temperature_shares
from corpus_platform.kernels.mixing.tokens import (
    TokenCounter,
    TokenizerError,
    load_counter,
    split_counts,
)
from tests.realtext import real_texts

SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "a training mix is drawn from the train split by source",
    "def main(): return 0",
]


def bpe_file(path: Path) -> Path:
    """A tiny BPE tokenizer trained on a few sentences, saved as tokenizers JSON."""
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=80, special_tokens=["[UNK]"], show_progress=False)
    tokenizer.train_from_iterator(SENTENCES, trainer)
    tokenizer.save(str(path))
    return path


def test_temperature_shares_follow_n_to_the_one_over_t() -> None:
    counts = {"a": 100, "b": 400, "c": 1600}
    assert temperature_shares(counts, 1.0) == pytest.approx(
        {"a": 1 / 21, "b": 4 / 21, "c": 16 / 21}
    )
    assert temperature_shares(counts, 2.0) == pytest.approx({"a": 1 / 7, "b": 2 / 7, "c": 4 / 7})
    assert temperature_shares(counts, 0.5)["c"] == pytest.approx(256 / 273)
    flat = temperature_shares(counts, 1000.0)
    assert max(flat.values()) - min(flat.values()) < 0.01
    assert temperature_shares({"a": 0, "b": 5}, 3.0) == {"a": 0.0, "b": 1.0}


def test_temperature_plan_repeats_no_source_without_a_total() -> None:
    plan = plan_mix({"c": 1600, "a": 100, "b": 400}, temperature=2.0)
    assert plan.rates == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.25})
    assert plan.rates["a"] == 1.0  # snapped: every row of the smallest source exactly once
    assert list(plan.rates) == ["a", "b", "c"] and plan.total == pytest.approx(700)
    assert plan.shares == pytest.approx({"a": 1 / 7, "b": 2 / 7, "c": 4 / 7})
    natural = plan_mix({"a": 100, "b": 400})
    assert natural.rates == {"a": 1.0, "b": 1.0} and natural.shares == {"a": 0.2, "b": 0.8}


def test_total_without_proportions_scales_every_source() -> None:
    assert plan_mix({"a": 100, "b": 300}, proportions={}, total=200).rates == {"a": 0.5, "b": 0.5}
    tokens = plan_mix({"a": 1000, "b": 4000}, unit="tokens", total=10_000, temperature=2.0)
    assert tokens.total == 10_000 and tokens.shares == pytest.approx({"a": 1 / 3, "b": 2 / 3})
    assert tokens.rates == pytest.approx({"a": 10_000 / 3 / 1000, "b": 20_000 / 3 / 4000})


def test_caps_hold_a_source_and_give_the_rest_to_the_others() -> None:
    counts = {"a": 100, "b": 400, "c": 1600}
    plan = plan_mix(counts, temperature=2.0, total=3000, max_epochs={"a": 2})
    assert plan.capped == ("a",)
    assert plan.rates["a"] == 2.0
    assert plan.rates["b"] * 400 == pytest.approx(2800 / 3)  # b : c stays 1 : 2
    assert plan.rates["c"] * 1600 == pytest.approx(5600 / 3)
    assert sum(plan.shares.values()) == pytest.approx(1.0)
    uncapped = plan_mix(counts, temperature=2.0, total=3000)
    assert uncapped.rates["a"] == pytest.approx(3000 / 7 / 100) and not uncapped.capped
    cascade = plan_mix(counts, temperature=2.0, total=3000, max_epochs=1.5)
    assert cascade.capped == ("a", "b") and cascade.rates["c"] == pytest.approx(2250 / 1600)
    with pytest.raises(MixError) as error:
        plan_mix(counts, temperature=2.0, total=3000, max_epochs=1)
    message = str(error.value)
    assert "mix.total_rows: 3000 documents" in message and "at most 2100 documents" in message
    assert "raise mix.max_epochs or lower mix.total_rows" in message


def test_explicit_proportions_beyond_a_cap_are_an_error_naming_the_source() -> None:
    counts, wanted = {"web": 1000, "code": 100}, {"web": 0.5, "code": 0.5}
    assert plan_mix(counts, proportions=wanted, total=400, max_epochs={"code": 2}).rates == {
        "code": 2.0,
        "web": 0.2,
    }
    with pytest.raises(MixError) as error:
        plan_mix(counts, unit="tokens", proportions=wanted, total=400, max_epochs={"code": 1.5})
    message = str(error.value)
    assert "mix.max_epochs: source 'code' needs 2 epochs" in message
    assert "but 1.5 are allowed" in message and "lower mix.total_tokens" in message
    with pytest.raises(MixError, match=r"mix.max_epochs names source\(s\) \['books'\]"):
        plan_mix(counts, max_epochs={"books": 2})
    with pytest.raises(MixError, match=r"source\(s\) \['code'\] with no train tokens"):
        plan_mix({"web": 10, "code": 0}, unit="tokens", proportions=wanted)


def test_whitespace_counter_counts_words() -> None:
    counter = TokenCounter()
    assert counter.name == "whitespace"
    assert counter.count(["a  b\nc\td", "", None, "  one  "]) == [4, 0, 0, 1]


def test_the_checks_count_is_len_of_str_split_at_every_code_point_and_on_real_text() -> None:
    """``count`` (the mix check's recount, :func:`split_counts`) is ``len(text.split())``: every
    code point between words, doubled, leading and trailing; lone surrogates; Debian's text
    (copyright files, changelogs, man pages); ASCII and other texts interleaved in batches of
    several passes (:data:`SPLIT_BATCH`)."""
    points = [c for c in range(0x110000) if c < 0x3100 or c % 97 == 0]  # every space < 0x3100
    texts: list[str | None] = [f"a{chr(c)}b{chr(c)}{chr(c)}c{chr(c)}" for c in points]
    texts += [f"{chr(c)}x" for c in points[::5]] + [None, "", " ", "\x1c\x1d", "\ud800 y"]
    texts += [t for pair in zip(real_texts(150), ["one two"] * 150, strict=True) for t in pair]
    expected = [len(t.split()) if t else 0 for t in texts]
    assert len(texts) > 10 * tokens_module.SPLIT_BATCH
    assert split_counts(texts).tolist() == expected
    assert TokenCounter().count(texts) == expected
    assert tokens_module.ASCII_SPACE_RUNS == ((9, 13), (28, 32))
    assert split_counts([]).tolist() == [] and split_counts([None, ""]).tolist() == [0, 0]


def test_a_column_is_counted_as_its_texts_one_by_one(tmp_path: Path) -> None:
    """``count_column`` (the mix's and the shard writer's count, on the texts' bytes for
    whitespace words) gives what ``count`` (the checks' recount, one text at a time) gives, on
    Debian text, Unicode spaces and nulls, and with a tokenizer file."""
    texts = ["a  b\nc\td", "", None, "x\u3000y\u00a0z", "\x1c", *real_texts(120)]
    column = pa.chunked_array([pa.array(texts[:3]), pa.array(texts[3:])])
    whitespace = TokenCounter()
    assert whitespace.count_column(column).tolist() == whitespace.count(texts)
    assert whitespace.count(texts)[:5] == [4, 0, 0, 3, 0]
    counter = load_counter(str(bpe_file(tmp_path / "tok.json")), tmp_path)
    assert counter.count_column(column).tolist() == counter.count(texts)


def test_tokenizer_file_counts_token_ids(tmp_path: Path) -> None:
    bpe_file(tmp_path / "tok.json")
    counter = load_counter("tok.json", tmp_path)
    reference = Tokenizer.from_file(str(tmp_path / "tok.json"))
    texts = ["the quick brown fox", "zebra quagga unseen words", None, "", *SENTENCES]
    expected = [len(reference.encode(t, add_special_tokens=False).ids) if t else 0 for t in texts]
    assert counter.count(texts) == expected
    assert expected != TokenCounter().count(texts)  # subwords, not whitespace words
    assert pickle.loads(pickle.dumps(counter)).count(texts) == expected  # engine workers


def test_a_missing_or_invalid_tokenizer_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError) as missing:
        load_counter("models/none.json", tmp_path)
    assert f"mix.tokenizer: {tmp_path / 'models' / 'none.json'}: tokenizer file not found" in str(
        missing.value
    )
    (tmp_path / "bad.json").write_text('{"not": "a tokenizer"}', encoding="utf-8")
    with pytest.raises(TokenizerError) as invalid:
        load_counter("bad.json", tmp_path)
    assert f"{tmp_path / 'bad.json'}: not a Hugging Face tokenizers JSON file" in str(invalid.value)
    counter = load_counter(str(bpe_file(tmp_path / "tok.json")), tmp_path)  # absolute path
    assert counter.count(["the fox"]) == [2]
    (tmp_path / "tok.json").write_text("{}", encoding="utf-8")  # changed under the build
    tokens_module._tokenizer.cache_clear()  # as in a fresh engine worker
    with pytest.raises(TokenizerError, match=r"tok\.json: the tokenizer file changed or vanished"):
        counter.count(["the fox"])


def mixed_rows(n: int) -> pa.Table:
    """web rows of 10 words, code rows of 100: documents and tokens disagree on shares."""
    sources = ["web" if i % 2 else "code" for i in range(n)]
    texts = [" ".join(["w"] * (10 if s == "web" else 100)) for s in sources]
    table = pa.table({"doc_id": [f"d{i:05d}" for i in range(n)], "source": sources, "text": texts})
    return table.append_column(TOKENS, pa.array(TokenCounter().count(texts), pa.int64()))


def test_token_weighted_draws_hit_token_proportions(tmp_path: Path) -> None:
    write_parquet(mixed_rows(20_000), tmp_path / "train" / "part-00000.parquet")
    available = source_units(0, tmp_path / "train", TokenCounter())
    assert available == {"code": 1_000_000, "web": 100_000}
    assert source_units(0, tmp_path / "train", None) == {"code": 10_000, "web": 10_000}
    plan = plan_mix(available, unit="tokens", proportions={"web": 0.5, "code": 0.5})
    assert plan.rates == {"code": 0.1, "web": 1.0}
    rows, tokens = draw_shard(0, tmp_path / "train", tmp_path / "mix", plan.rates, seed=7)
    assert tokens["web"] == 100_000 and tokens["code"] == 100 * rows["code"]
    assert abs(tokens["web"] / sum(tokens.values()) - 0.5) < 0.02
    assert rows["web"] / sum(rows.values()) > 0.85  # in documents the mix is mostly web
    texts = TextSource(tmp_path / "train", some_rows=True)  # the mix stores no text
    recounted, wrong = drawn_units(0, tmp_path / "mix", TokenCounter(), texts=texts)
    assert (recounted, wrong) == (tokens, 0)
    mix = read_shard(tmp_path / "mix", 0)
    assert mix.column_names[-2:] == [TOKENS, "times_drawn"] and "text" not in mix.column_names
    lying = mix.set_column(mix.schema.get_field_index(TOKENS), TOKENS, pa.array([1] * len(mix)))
    write_parquet(lying, tmp_path / "lying" / "part-00000.parquet")
    assert drawn_units(0, tmp_path / "lying", TokenCounter(), texts=texts) == (tokens, len(mix))
    assert drawn_units(0, tmp_path / "lying", None)[0] == rows


def test_draws_are_the_same_on_rerun(tmp_path: Path) -> None:
    write_parquet(mixed_rows(2_000), tmp_path / "train" / "part-00000.parquet")
    rates = {"code": 0.37, "web": 1.6}
    for name in ("a", "b"):
        draw_shard(0, tmp_path / "train", tmp_path / name, rates, seed=11)
    first, second = (generation_path(tmp_path / n, 0, 0).read_bytes() for n in ("a", "b"))
    assert first == second
    mix = read_shard(tmp_path / "a", 0)
    columns = mix.select(["source", "times_drawn"]).to_pydict().values()
    draws = set(zip(*columns, strict=True))
    assert draws == {("web", 1), ("web", 2), ("code", 1)}  # floor(rate) + a coin


@pytest.mark.parametrize(
    ("mix", "field", "fix"),
    [
        (
            {"unit": "tokens", "total_rows": 5},
            "mix: mix.total_rows counts documents",
            "total_tokens",
        ),
        ({"total_tokens": 5}, "mix: mix.total_tokens counts tokens", "set mix.unit: tokens"),
        ({"tokenizer": "tok.json"}, "mix: mix.tokenizer is read only", "set mix.unit: tokens"),
        ({"temperature": 2.0}, "mix: mix.temperature sets the shares", "not both"),
        ({"proportions": {}, "temperature": 0}, "mix.temperature: Input should be greater", ""),
        ({"max_epochs": 0.5}, "mix.max_epochs: max_epochs must be at least 1", "(got 0.5)"),
        ({"max_epochs": {"code": "x"}}, "mix.max_epochs: max_epochs is a number", "'code'"),
        ({"unit": "tokens", "tokenizer": "/abs/tok.json"}, "mix.tokenizer: give", "relative"),
        ({"unit": "sentences"}, "mix.unit: Input should be 'documents' or 'tokens'", ""),
    ],
)
def test_bad_mix_settings_name_the_field_and_the_fix(mix: dict, field: str, fix: str) -> None:
    data = {"mix": {"proportions": {"web": 1.0}, **mix}}
    with pytest.raises(ConfigError) as error:
        parse_config(data)
    assert field in str(error.value) and fix in str(error.value)


def test_good_mix_settings_load() -> None:
    mix = parse_config(
        {"mix": {"unit": "tokens", "temperature": 3, "max_epochs": {"code": 2}, "total_tokens": 9}}
    ).mix
    assert (mix.total, mix.temperature, mix.max_epochs) == (9, 3.0, {"code": 2.0})
    assert parse_config({"mix": {"max_epochs": 4}}).mix.max_epochs == 4.0
    assert parse_config({}).mix.unit == "documents" and parse_config({}).mix.total is None
    assert math.isclose(parse_config({"mix": {"total_rows": 7}}).mix.total, 7)


def test_a_feature_named_tokens_clashes_only_with_the_token_mix() -> None:
    data = {"input": {"columns": {"doc_id": "id"}, "features": ["tokens"]}}
    assert parse_config(data).mix.unit == "documents"
    with pytest.raises(ConfigError, match="writes a column `tokens`; rename feature `tokens`"):
        parse_config({**data, "mix": {"unit": "tokens"}})

"""Parsing one text frame into a typed frame, and the refusals with their exact messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.client import Client, RequestError
from protocol.envelope import (
    MAX_TOKEN,
    Hello,
    Request,
    Subscribe,
    Unsubscribe,
    encode_error,
    encode_push,
    encode_result,
    parse_frame,
    request_id_of,
)
from protocol.errors import ErrorCode, ProtocolError
from tests.server.ws_harness import running_server
from tests.utf16 import edges


def test_parses_each_frame_kind() -> None:
    assert parse_frame('{"op":"hello","protocol":1,"token":"t","client":"c/1"}') == \
        Hello(0, 1, "t", "c/1")
    assert parse_frame('{"op":"hello","protocol":1,"id":3}') == Hello(3, 1, None, "")
    assert parse_frame('{"id":7,"op":"x.y","to":"a:b","args":{"n":1}}') == \
        Request(7, "x.y", "a:b", {"n": 1})
    assert parse_frame('{"id":7,"op":"lobby.list"}') == Request(7, "lobby.list", None, {})
    assert parse_frame('{"id":8,"op":"subscribe","to":"a:b","since":120}') == \
        Subscribe(8, "a:b", 120)
    assert parse_frame('{"id":8,"op":"subscribe","to":"a:b"}') == Subscribe(8, "a:b", None)
    assert parse_frame('{"id":9,"op":"unsubscribe","to":"a:b"}') == Unsubscribe(9, "a:b")


@pytest.mark.parametrize(("text", "message", "rid"), [
    ("[", "not JSON: Expecting value: line 1 column 2 (char 1)", None),
    ('{"id": NaN}', "not JSON: NaN is not valid JSON", None),
    ("[1]", "expected a JSON object, got a list", None),
    ('{"id": 1}', "op: expected a string", 1),
    ('{"id": "1", "op": 5}', "op: expected a string", None),
    ('{"op": "x.y"}', "id: required field missing", None),
    ('{"id": true, "op": "x.y"}', "id: expected an integer from 0 to 9007199254740991", None),
    ('{"id": 1, "op": "x.y", "args": []}', "args: expected an object", 1),
    ('{"id": 1, "op": "x.y", "to": "nope"}', "to: 'nope' is not an actor id 'kind:name'", 1),
    ('{"id": 1, "op": "x.y", "to": 3}', "to: expected a string 'kind:name'", 1),
    ('{"id": 1, "op": "x.y", "zz": 3}', "zz: unknown key in a 'x.y' frame", 1),
    ('{"id": 1, "op": "subscribe", "to": "a:b", "since": -1}',
     "since: expected a non-negative integer or null", 1),
    ('{"id": 1, "op": "subscribe", "to": "a:b", "args": {}}',
     "args: unknown key in a 'subscribe' frame", 1),
    ('{"op": "hello", "protocol": 2}', "protocol: this server speaks protocol 1", 0),
    ('{"op": "hello", "protocol": true}', "protocol: this server speaks protocol 1", 0),
    ('{"op": "hello", "protocol": 1, "token": 5}', "token: expected a string or null", 0),
])
def test_refusals_name_the_field(text: str, message: str, rid: int | None) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_frame(text)
    assert err.value.code == ErrorCode.BAD_REQUEST
    assert err.value.message == message
    assert request_id_of(err.value) == rid


@pytest.mark.parametrize(("key", "n", "message"), [
    ("token", MAX_TOKEN, f"token: at most {MAX_TOKEN} characters"),
    ("client", 100, "client: expected a string of at most 100 characters")])
def test_a_hellos_texts_count_utf16_code_units(key: str, n: int, message: str) -> None:
    for text, accepted in edges(n):
        frame = json.dumps({"op": "hello", "protocol": 1, key: text}, ensure_ascii=False)
        if accepted:
            assert getattr(parse_frame(frame), key) == text
        else:
            with pytest.raises(ProtocolError, match=rf"^{message}$"):
                parse_frame(frame)


def test_encoders_write_compact_json() -> None:
    assert encode_result(3, {"a": [1]}) == '{"id":3,"ok":true,"result":{"a":[1]}}'
    assert json.loads(encode_error(None, ProtocolError(ErrorCode.FORBIDDEN, "no", {"x": 1}))) == {
        "id": None, "ok": False,
        "error": {"code": "forbidden", "message": "no", "detail": {"x": 1}}}
    assert encode_push("a:b", 4, "events", [{"t": "é"}]) == \
        '{"topic":"a:b","rev":4,"kind":"events","data":[{"t":"é"}]}'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["id", "op", "to", "args", "since", "token", "protocol", "x"]), inner,
        max_size=5),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40), json_values.map(json.dumps)))
def test_any_text_parses_or_is_refused_with_bad_request(text: str) -> None:
    try:
        frame = parse_frame(text)
    except ProtocolError as error:
        assert error.code == ErrorCode.BAD_REQUEST
        rid = request_id_of(error)
        assert rid is None or (isinstance(rid, int) and 0 <= rid < 2**53)
    else:
        assert isinstance(frame, Hello | Request | Subscribe | Unsubscribe)


BEYOND = "is beyond +-(2^53 - 1), the range every JSON reader holds exactly"


@pytest.mark.parametrize(("text", "message", "path", "rid"), [
    (r'{"id": 3, "op": "a.b", "args": {"name": "\ud800"}}',
     "args.name: text must be valid Unicode (no NUL, no lone surrogate)", "args.name", 3),
    (r'{"id": 3, "op": "a.b", "args": {"x": ["ok", {"deep": "\udfff!"}]}}',
     "args.x[1].deep: text must be valid Unicode (no NUL, no lone surrogate)",
     "args.x[1].deep", 3),
    (r'{"id": 3, "op": "a.b", "args": {"n": "nul\u0000"}}',
     "args.n: text must be valid Unicode (no NUL, no lone surrogate)", "args.n", 3),
    (r'{"id": 3, "op": "a.b", "args": {"ok": "\u00e9\uD83D\uDE00", "n": "\uDBFF"}}',
     "args.n: text must be valid Unicode (no NUL, no lone surrogate)", "args.n", 3),
    ('{"id": 3, "op": "a.b", "args": {"n": 9007199254740992}}',
     f"args.n: the integer 9007199254740992 {BEYOND}", "args.n", 3),
    ('{"op": "a.b", "args": {"n": [1, {"m": -1' + "0" * 40 + '}]}, "id": 3}',
     f"args.n[1].m: the integer -10000000000000000000000 {BEYOND}", "args.n[1].m", 3),
    ('{"id": 3, "op": "a.b", "args": {"n": 1e400}}', "args.n: the number 1e400 is out of range",
     "args.n", 3),
    ('{"id": 9007199254740992, "op": "a.b"}', f"id: the integer 9007199254740992 {BEYOND}", "id",
     None),
    ('{"id": "3", "op": "a.b", "args": {"n": -1e400}}',
     "args.n: the number -1e400 is out of range", "args.n", None),
    ('[0, 1e400]', "[1]: the number 1e400 is out of range", "[1]", None),
    ('{"op": "hello", "protocol": 1, "id": 0, "token": 1e400}',
     "token: the number 1e400 is out of range", "token", 0),
    ('{"op": "hello", "protocol": 1, "id": 5, "token": 1e400}',
     "token: the number 1e400 is out of range", "token", 5),
    # a hello without an id: its default, 0, as for its other refusals (it was null)
    ('{"op": "hello", "protocol": 1, "token": 1e400}',
     "token: the number 1e400 is out of range", "token", 0),
    (r'{"op": "hello", "protocol": 1, "client": "a\u0000"}',
     "client: text must be valid Unicode (no NUL, no lone surrogate)", "client", 0),
])
def test_text_and_numbers_no_client_can_read_back_are_refused(text: str, message: str, path: str,
                                                              rid: int | None) -> None:
    """Refused naming the path, and answered with the frame's id when it has a valid one."""
    with pytest.raises(ProtocolError) as err:
        parse_frame(text)
    assert err.value.code == "bad_request" and err.value.message == message
    assert err.value.detail == {"path": path} and request_id_of(err.value) == rid


@pytest.mark.parametrize(("text", "rid"), [
    ('{"id": 3, "op": "a.b", "args": {"n": 1e400} x', None),  # not JSON after the number
    ('{"id": 3, "op": "a.b", "args": {"n": 1e400, "m": ' + "[" * 100_000 + "]" * 100_000 + "}}",
     None),  # nested too deep after it
    ('{"id": 3, "op": "a.b", "args": {"n": 1e400, "n": 1}}', 3),  # replaced by a later "n"
])
def test_a_bad_number_whose_place_cannot_be_read_is_refused_as_before(text: str,
                                                                       rid: int | None) -> None:
    with pytest.raises(ProtocolError, match=r"^bad number: the number 1e400 is out of range$") \
            as err:
        parse_frame(text)
    assert err.value.detail == {} and request_id_of(err.value) == rid


def test_a_surrogate_pair_and_the_largest_exact_integers_pass() -> None:
    frame = parse_frame(r'{"id": 3, "op": "a.b", "args": {"s": "\ud83d\ude00", '
                        '"n": [9007199254740991, -9007199254740991, 1.5e300]}}')
    assert frame.args == {"s": "\U0001F600", "n": [2**53 - 1, -(2**53 - 1), 1.5e300]}


async def test_a_bad_number_is_refused_to_the_request_that_sent_it(tmp_path: Path) -> None:
    """Through a real server: the refusal carries the request's id, so the client's call
    raises it instead of waiting out its timeout (as it did when the reply's id was null),
    and nothing changed."""
    async with running_server(tmp_path) as srv, \
            Client.connect(srv.ws_url, token=srv.owner_token) as c:
        await c.request("lobby.create", args={"kind": "counter", "name": "w"})
        with pytest.raises(RequestError) as info:
            await c.request("counter.add", "counter:w", {"amount": 2**53}, timeout=20)
        refused = info.value
        assert (refused.code, refused.message, refused.detail) == (
            "bad_request", f"args.amount: the integer 9007199254740992 {BEYOND}",
            {"path": "args.amount"})
        assert await c.request("counter.get", "counter:w") == {"total": 0, "adds": 0,
                                                               "revision": 1}

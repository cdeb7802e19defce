"""The seed's validation tables, row by row, with the exact reason strings and order."""

from __future__ import annotations

import inspect
import logging
import string
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.lab import validate_panel, validate_shader
from actors.lab.contract import MAX_CHARS, MIN_CHARS
from actors.lab.validation import NOT_TEXT, static_reason, validate

GOOD_SHADER = """void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    fragColor = vec4(uv, 0.5 + 0.5 * sin(u_time), 1.0);
}
"""
GOOD_PANEL = """<style>
.pd{width:520px;height:400px;background:#111;color:#eee;font-family:sans-serif}
.pd p{margin:0}
</style>
<div class="pd"><p>population 48,210</p></div>
"""


def test_good_examples_pass() -> None:
    assert validate("shader", GOOD_SHADER) is None
    assert validate("panel", GOOD_PANEL) is None


# --- length bounds (both tracks) ---------------------------------------------------------


@pytest.mark.parametrize("track", ["shader", "panel"])
def test_too_short(track: str) -> None:
    assert validate(track, "x" * (MIN_CHARS - 1)) == "too short"


@pytest.mark.parametrize("track", ["shader", "panel"])
def test_too_long(track: str) -> None:
    assert validate(track, "x" * (MAX_CHARS + 1)) == "too long"


def test_length_bounds_are_inclusive_edges() -> None:
    # exactly 60 and exactly 24,000 characters pass the length rule (and fail later rules)
    assert static_reason("shader", "x" * MIN_CHARS) == "no main()"
    assert static_reason("shader", "x" * MAX_CHARS) == "no main()"


def test_unknown_track_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"^unknown track 'audio'"):
        validate("audio", GOOD_SHADER)


# --- the shader table --------------------------------------------------------------------

SHADER_ROWS = [
    ("no main()", GOOD_SHADER.replace("void main()", "void mainImage()")),
    # the seed's test is the literal `void main(`: whitespace the compiler skips is no main
    ("no main()", GOOD_SHADER.replace("void main()", "void main ()")),
    ("no main()", GOOD_SHADER.replace("void main()", "void  main()")),
    ("no main()", GOOD_SHADER.replace("void main()", "void\nmain()")),
    ("redeclared #version", "#version 300 es\n" + GOOD_SHADER),
    ("uses textures", "uniform sampler2D u_tex;\n" + GOOD_SHADER),
    ("uses textures", GOOD_SHADER.replace("vec4(uv,", "texture(u_res, uv) + vec4(uv,")),
    ("redeclared fragColor", "out vec4 fragColor;\n" + GOOD_SHADER),
    ("extra uniform", "uniform float u_speed;\n" + GOOD_SHADER),
    (
        "unbounded loop",
        GOOD_SHADER.replace("fragColor =", "int i = 0; while (i < 4) { i++; }\n    fragColor ="),
    ),
    (
        "unbounded loop",
        GOOD_SHADER.replace("fragColor =", "for (int i = 0; ; i++) { break; }\n    fragColor ="),
    ),
    (  # an init holding a call still leaves the condition empty
        "unbounded loop",
        GOOD_SHADER.replace(
            "fragColor =", "for (int i = int(floor(uv.x)); ; i++) { break; }\n    fragColor ="
        ),
    ),
    (  # however deeply its calls nest
        "unbounded loop",
        GOOD_SHADER.replace(
            "fragColor =",
            "for (int i = int(floor(abs(sin(uv.x)))); ; i++) { break; }\n    fragColor =",
        ),
    ),
    (  # after a bounded loop, and after headers that share its stop
        "unbounded loop",
        GOOD_SHADER.replace(
            "fragColor =",
            "for (int j = 0; j < 2; j++) {}\n    for(for (int i = 0;\n ; i++) { break; }\n"
            "    fragColor =",
        ),
    ),
]


@pytest.mark.parametrize(
    ("reason", "code"), SHADER_ROWS, ids=[f"{r}-{i}" for i, (r, _) in enumerate(SHADER_ROWS)]
)
def test_shader_table_row(reason: str, code: str) -> None:
    assert validate("shader", code) == reason


def test_the_main_row_reads_the_raw_body_as_the_seed_words_it() -> None:
    """Anywhere in the source, a comment included (as every row reads the raw body); the
    compiler's view still needs a `main` outside comments and dead branches."""
    spaced = GOOD_SHADER.replace("void main()", "void main ()")
    assert static_reason("shader", "// void main(\n" + spaced) is None
    assert static_reason("shader", "// void main()\n" + spaced.replace("main", "mane")) == \
        "no main()"


def test_shader_rows_apply_in_seed_order() -> None:
    # breaks every row at once: the first row in the seed's order wins
    code = (
        "#version 300 es\nuniform sampler2D t;\nout vec4 fragColor;\nuniform float x;\n"
        "void f() { while (true) {} }\n"
    )
    assert validate("shader", code) == "no main()"
    assert validate("shader", code + GOOD_SHADER) == "redeclared #version"
    assert (
        validate("shader", code.replace("#version 300 es\n", "") + GOOD_SHADER) == "uses textures"
    )


def test_shader_quirk_u_audio_is_an_extra_uniform() -> None:
    assert validate("shader", "uniform vec4 u_audio;\n" + GOOD_SHADER) == "extra uniform"


@pytest.mark.parametrize(
    "decl", ["uniform float u_time;", "uniform vec2 u_res;", "uniform highp float u_time;"]
)
def test_shader_quirk_u_time_u_res_pass_the_static_test(decl: str) -> None:
    assert static_reason("shader", decl + "\n" + GOOD_SHADER) is None


# --- the panel table ---------------------------------------------------------------------


def _panel_with(markup: str = "", css: str = "") -> str:
    return GOOD_PANEL.replace("</style>", css + "</style>").replace("</div>", markup + "</div>")


PANEL_ROWS = [
    ("contains script", _panel_with("<script>1</script>")),
    ("contains script", _panel_with("</script>")),
    ("no style block", '<div class="pd"><p>population 48,210 and some more words here</p></div>'),
    ("event handler attribute", _panel_with('<p onmouseover="x()">a</p>')),
    ("external reference", _panel_with('<p title="http://example.org">a</p>')),
    ("protocol-relative reference", _panel_with('<p title="//cdn.example.com/x">a</p>')),
    ("css import", _panel_with(css='@import "a.css";\n')),
    ("css url()", _panel_with(css=".pd{background:url(a.png)}\n")),
]
FORBIDDEN_TAGS = [
    "html",
    "head",
    "body",
    "iframe",
    "object",
    "embed",
    "link",
    "meta",
    "base",
    "form",
    "svg",
    "video",
    "audio",
    "source",
    "track",
]
SCHEMES = ["javascript:", "data:", "blob:", "file:", "vbscript:"]


@pytest.mark.parametrize(
    ("reason", "code"), PANEL_ROWS, ids=[f"{r}-{i}" for i, (r, _) in enumerate(PANEL_ROWS)]
)
def test_panel_table_row(reason: str, code: str) -> None:
    assert validate("panel", code) == reason


@pytest.mark.parametrize("tag", FORBIDDEN_TAGS)
def test_panel_forbidden_tag_row(tag: str) -> None:
    assert validate("panel", _panel_with(f"<{tag}>")) == "forbidden tag"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_panel_forbidden_url_scheme_row(scheme: str) -> None:
    assert validate("panel", _panel_with(f'<p title="{scheme}x">a</p>')) == "forbidden url scheme"


def test_panel_rows_apply_in_seed_order() -> None:
    everything = _panel_with(
        '<script></script><iframe onload="x"></iframe>', '@import "http://a/b";'
    )
    assert validate("panel", everything) == "contains script"
    assert validate("panel", everything.replace("<script></script>", "")) == "forbidden tag"


# --- hardening and the compile step ---------------------------------------------------------


def test_compile_error_reason_is_first_error_line() -> None:
    if validate_shader.glslang_path() is None:
        pytest.skip("glslangValidator is not installed")
    code = GOOD_SHADER.replace("vec2 uv", "float bad = 1;\n    vec2 uv")
    assert static_reason("shader", code) is None
    assert validate("shader", code) == (
        "ERROR: stdin:8: '=' :  cannot convert from ' const int' to ' temp highp float'"
    )


def test_missing_glslang_skips_the_compile_step_with_a_warning(monkeypatch, caplog) -> None:
    validate_shader.glslang_path.cache_clear()
    monkeypatch.setattr(validate_shader.shutil, "which", lambda name: None)
    try:
        with caplog.at_level(logging.WARNING, logger=validate_shader.__name__):
            code = GOOD_SHADER.replace("vec2 uv", "float bad = 1;\n    vec2 uv")
            assert validate("shader", code) is None
        assert "glslangValidator not found" in caplog.text
    finally:
        validate_shader.glslang_path.cache_clear()


def test_loop_cost_follows_function_calls() -> None:
    helper = (
        "float f(vec2 p) { float s = 0.0; for (int i = 0; i < 64; i++) { s += p.x; } return s; }\n"
    )
    inside = GOOD_SHADER.replace(
        "fragColor =",
        "float s = 0.0;\n    for (int k = 0; k < 64; k++) { s += f(uv); }\n    fragColor =",
    )
    assert static_reason("shader", helper + inside) is None  # 64 x 64 = 4096
    assert (
        static_reason("shader", helper + inside.replace("k < 64", "k < 65")) == "loop bound over 64"
    )
    deeper = inside.replace("s += f(uv);", "for (int j = 0; j < 2; j++) { s += f(uv); }")
    assert static_reason("shader", helper + deeper) == "loop cost over 4096"


def test_line_continuation_cannot_hide_a_loop() -> None:
    hidden = GOOD_SHADER.replace(
        "fragColor =", "for (int i = 0; i < 6\\\n5; i++) {}\n    fragColor ="
    )
    assert static_reason("shader", hidden) == "loop bound over 64"


# --- bounds: what once overflowed the rules gets a reason ------------------------------------


def loops(header: str) -> str:
    return GOOD_SHADER.replace("fragColor =", f"for ({header}) {{ uv.x += 0.1; }}\n    fragColor =")


@pytest.mark.parametrize(
    "header",
    ["int i = 0; i < 1e999; i++", "int i = 1e999; i < 4; i++",
     "float x = 0.0; x < 4.0; x += 1e999"],
)
def test_a_non_finite_literal_is_no_constant(header: str) -> None:
    assert static_reason("shader", loops(header)) == "loop bound not constant"


def nested_loops(n: int) -> str:
    names = [a + b for a in "abcdefghijklmnopqrstuvwxyz" for b in "abcdefghijklmnopqrstuvwxyz"]
    nest = "".join(f"for(int {v}=0;{v}<1;{v}++)" for v in names[:n])
    return "void main(){float a=0.0;" + nest + "a+=1.0;fragColor=vec4(a,u_time,0,1);}\n"


def call_chain(n: int) -> str:
    calls = "".join(f"float f{k}(){{return f{k + 1}();}}" for k in range(n - 1))
    return calls + f"float f{n - 1}(){{return 1.0;}}void main(){{fragColor=vec4(f0());}}\n"


def test_loops_and_calls_nest_at_most_64_deep() -> None:
    deep = "loops and calls nested over 64 deep"
    assert static_reason("shader", nested_loops(64)) is None
    assert static_reason("shader", nested_loops(65)) == deep
    assert static_reason("shader", nested_loops(1000)) == deep  # once a RecursionError
    assert static_reason("shader", call_chain(64)) is None  # main calls f0: 64 deep
    assert static_reason("shader", call_chain(65)) == deep
    assert static_reason("shader", call_chain(600)) == deep


@pytest.mark.parametrize(
    "panel",
    [
        GOOD_PANEL.replace("{margin:0}", "{margin:" + "(" * 2000 + "0" + ")" * 2000 + "}"),
        GOOD_PANEL.replace("{margin:0}", "{margin:" + "calc(" * 2000 + "0" + ")" * 2000 + "}"),
        GOOD_PANEL.replace("{margin:0}", "{width:" + "[" * 2000 + "0" + "]" * 2000 + "}"),
        GOOD_PANEL.replace("{margin:0}", "{" + "&{" * 2000 + "margin:0" + "}" * 2000 + "}"),
        GOOD_PANEL.replace(".pd p{", "@media{" * 2000 + ".pd p{").replace(
            "</style>", "}" * 2000 + "</style>"),
        GOOD_PANEL.replace(".pd p", ".pd" + ":is(" * 2000 + "p" + ")" * 2000),
        GOOD_PANEL.replace('class="pd"', 'class="pd" style="width:' + "(" * 2000 + "0"
                           + ")" * 2000 + '"'),
    ],
    ids=["parentheses", "calc", "brackets", "nested rules", "at-rules", ":is", "style attribute"],
)
def test_css_nests_at_most_32_deep(panel: str) -> None:
    assert static_reason("panel", panel) == "css nested over 32 deep"


def test_css_nested_32_deep_passes() -> None:
    def calcs(n: int) -> str:  # the rule's {} block is one level, each calc( one more
        return GOOD_PANEL.replace("{margin:0}", "{margin:" + "calc(" * n + "0" + ")" * n + "}")

    assert static_reason("panel", calcs(31)) is None
    assert static_reason("panel", calcs(32)) == "css nested over 32 deep"


def test_rules_that_overflow_refuse_instead_of_raising(caplog) -> None:
    # No input is known to overflow the bounded rules: a low recursion limit stands in.
    code = nested_loops(64)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 50)
    try:
        reason = static_reason("shader", code)
    finally:
        sys.setrecursionlimit(limit)
    assert reason == "too complex to validate"
    assert "the shader rules overflowed" in caplog.text


# --- hostile sizes (their time is measured by `python -m bench lab`) -----------------------------------------------


def test_600_structs_and_750_constants_are_read_and_pass() -> None:
    # (each of the 750 constants ran its own regex, every struct name an alternative: 14 s;
    # `python -m bench lab` times it now, hostile_seconds)
    pairs = [a + b for a in string.ascii_letters for b in string.ascii_letters]
    code = ("".join(f"struct S{v}{{int x;}};" for v in pairs[:600])
            + "".join(f"const int {v}=1;" for v in pairs[:750])
            + "void main(){fragColor=vec4(u_time);}\n")
    assert static_reason("shader", code) is None


def test_the_protocol_relative_row_reads_a_long_run_of_spaces() -> None:
    # `=` then 23,900 spaces took seconds: the row tried every split of the run
    row = {reason: pattern for reason, pattern, _ in validate_panel.SEED_RULES}
    pattern = row["protocol-relative reference"]
    assert pattern.search("=" + " " * 200_000) is None  # (its time: `python -m bench lab`)
    assert pattern.search("=" + " " * 200_000 + "'//host.example") is not None


@pytest.mark.parametrize(("track", "code"), [
    ("shader", "void main(){fragColor=vec4(u_time);}\n// \x00 a NUL in a comment\n"),
    ("panel", '<div class="p"><style>.p{color:red}</style>\ud800 half a pair</div>'),
])
def test_code_that_is_not_text_is_refused(track: str, code: str) -> None:
    assert validate(track, code) == NOT_TEXT


# --- robustness: arbitrary input gets a reason or None, never an exception ---------------------


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_any_shader_text_gets_an_answer(junk: str) -> None:
    for code in (
        junk,
        GOOD_SHADER + junk,
        GOOD_SHADER.replace("fragColor =", junk + "\n    fragColor ="),
    ):
        reason = static_reason("shader", code)
        assert reason is None or isinstance(reason, str)


@settings(max_examples=150, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("<>/=\"' .{}();:@\\#&-_abcdeilmnorstuvxy01")), max_size=300
    )
)
def test_any_panel_text_gets_an_answer(junk: str) -> None:
    for code in (
        junk,
        GOOD_PANEL.replace("</div>", junk + "</div>"),
        GOOD_PANEL.replace("</style>", junk + "</style>"),
    ):
        reason = validate("panel", code)
        assert reason is None or isinstance(reason, str)

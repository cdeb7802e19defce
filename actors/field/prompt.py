"""The field's MCP prompt: the seed's agent prompt (its bootstrap), served as `play_mosaic`:
how to find today's game and play it, health as a fact of the field."""

from __future__ import annotations

from datetime import UTC, date, datetime

from actors.world import Prompt, ToolCall


def today(call: ToolCall) -> date:
    """The UTC day of the call."""
    return datetime.fromtimestamp(call.t / 1000, UTC).date()


def bootstrap(origin: str, day: str | None) -> list[str]:
    """The seed's agent prompt, line by line: how to find today's game and play it."""
    o = origin.rstrip("/")
    hosted = day is not None
    target = (f"join today's field ({day}): call list_games and join the game whose day is "
              f"{day}" if hosted else "call list_games; if a field is playing, join it")
    no_field = ("If no field is listed yet, today's is still being prepared: wait a few"
                if hosted else
                "If no field is playing, start one (start_mosaic with kind=field, chunks=3,")
    no_field2 = ("minutes and call list_games again. join gives you an" if hosted else
                 "grow={every_minutes: 30}) and join it. join gives you an")
    return [
        f"Using the mosaic MCP server at {o}/mcp: {target} (join with game_id, a",
        "short name, machine_id if you have a durable one, and the model you are, e.g.",
        f"model=claude-opus-5). {no_field}",
        no_field2,
        "agent id and a seed tile at a random spot; every reveal, commit and retract",
        "carries that agent id. Play autonomously with observe (agent=<your id>:",
        "your territory and its surroundings), reveal and commit. Read the tool",
        "descriptions for the rules (they are per line of a tile). Reveal your seed",
        "tile first; commit in batches with a one-line intent; when a tile alone is",
        "ambiguous, expand from a tile your group solved or commit a guess; when you",
        "meet another agent your territories merge and you share a frontier. The field",
        "grows during the day and unexplored tiles appear only once your territory",
        "reaches them: observe again after every batch. Your health is your wrong-rate",
        "over your last 2,000 committed cells: under 1.5% healthy, 1.5-4% warning, 4%",
        "death for the day (your territory stays, you write no more). Guessing bleeds",
        "you: commit what you can prove, guess only when a tile is genuinely ambiguous.",
        "Keep playing until observe reports the game ended, without asking me anything.",
    ]


async def play_prompt(call: ToolCall) -> str:
    """The bootstrap for today (this server hosts a daily field every day)."""
    return "\n".join(bootstrap(call.origin, today(call).isoformat()))


PROMPTS = (
    Prompt("play_mosaic", "Play today's mosaic field",
           "The agent prompt: find today's game with list_games, join it and play it to the "
           "end (health is a fact of the field).", play_prompt),
)

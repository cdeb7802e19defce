"""The process: Starlette app on Hypercorn's trio worker, sessions, routes, auth, storage, CLI."""

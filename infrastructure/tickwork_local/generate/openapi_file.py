"""The API's OpenAPI document as a file beside the API function's code (functions/api/openapi.json): generated
from the routes, committed, and served as it is, so that no execution environment spends a second of CPU building
it on its first request for the document or for a method a path does not take.

    python -m tickwork_local.generate.openapi_file           # rewrite functions/api/openapi.json from the routes
    python -m tickwork_local.generate.openapi_file --check   # exit 1 if the file differs from what the routes build (a test)
"""

from __future__ import annotations

import sys

from tickwork_local.stack.template import REPO_ROOT

FUNCTIONS = REPO_ROOT / "functions"


def main(argv: list[str] | None = None) -> int:
    """Run in a process of its own: one whose registry holds more than the built-in job types (a test's) would
    build another document."""
    args = sys.argv[1:] if argv is None else argv
    for folder in (FUNCTIONS, FUNCTIONS / "api"):  # the function's package, and its modules' siblings, as in Lambda
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    from api.app import OPENAPI_FILE, build_openapi_document  # noqa: PLC0415 - once the path holds the function

    document = build_openapi_document()
    if "--check" in args:
        if OPENAPI_FILE.read_text(encoding="utf-8") != document:
            print(
                f"{OPENAPI_FILE} differs from the routes: run python -m tickwork_local.generate.openapi_file",
                file=sys.stderr,
            )
            return 1
        return 0
    OPENAPI_FILE.write_text(document, encoding="utf-8")
    print(f"wrote {OPENAPI_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

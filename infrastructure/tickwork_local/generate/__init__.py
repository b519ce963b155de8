"""The committed files generated from the code (`make generated`), each with a `--check` a test runs: docs/deploy.md's
and docs/local.md's generated sections, docs/house.md's map and the API's OpenAPI document."""

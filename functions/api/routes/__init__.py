"""The API's routes, one Powertools Router per resource (meta, jobs, runs, dlq, dead-letters, workflows); app.py includes them in the
order of the OpenAPI document's paths."""

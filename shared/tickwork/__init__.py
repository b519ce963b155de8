"""Tickwork, the domain: a serverless job scheduler in rooms by stage (docs/house.md)."""

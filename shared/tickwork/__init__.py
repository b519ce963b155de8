"""Tickwork, the domain: a serverless job scheduler in rooms by stage (README, "Where things live")."""

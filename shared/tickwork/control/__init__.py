"""Control: what the API calls to create, change, read and account for jobs, workflows, runs and tenants."""

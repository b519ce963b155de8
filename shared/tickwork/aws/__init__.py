"""AWS beyond DynamoDB: the lazily built clients, the SQS queues, the results and the audit trail's archive in S3,
and CloudWatch's metric series. Imports only the model (and settings, observability, faults)."""

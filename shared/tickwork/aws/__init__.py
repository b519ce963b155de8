"""AWS beyond DynamoDB: the lazily built clients, the SQS queues, the results in S3, and CloudWatch's metric
series. Imports only the model (and settings, observability, faults)."""

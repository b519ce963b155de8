"""The functions run as Lambda runs them (in-process, or in processes of their own Python), and what plays their
event sources: the local node, API Gateway, the EventBridge schedule, SQS event source mappings, Invoke and the run
events' rule."""

"""The local stand-ins for the infrastructure: moto, the Lambda runtime, event sources and `tickwork dev`."""

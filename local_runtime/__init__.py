"""Docker-free local runtime: DynamoDB Local, an API Gateway-like gateway, a stream poller."""

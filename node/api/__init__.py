"""The node's gRPC edge: services, interceptors, and the error → status mapping."""

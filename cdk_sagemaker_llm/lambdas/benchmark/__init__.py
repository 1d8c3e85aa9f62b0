"""Deploy-time handlers of ``EndpointBenchmark`` (see ``handler``)."""

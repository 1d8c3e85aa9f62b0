"""Deploy-time handlers of ``EndpointBenchmark`` on a SageMaker AI benchmark job (see
``handler``)."""

"""Handlers of OptimizationJob: the custom resources and the Step Functions poll step."""

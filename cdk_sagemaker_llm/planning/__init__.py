"""Pure planning (no aws_cdk): sizing, the performance model and layout recommendations."""

"""Custom-resource handlers: plain Python + boto3, one folder each, shipped as Lambda assets."""

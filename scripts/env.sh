# Sourced by the scripts: the project's tools first on PATH, and no cloud calls at synth.
export PATH="$PWD/.venv/bin:$PWD/node_modules/.bin:$PATH"
# No AWS account here: never wait on the EC2 metadata service for credentials.
export AWS_EC2_METADATA_DISABLED=true

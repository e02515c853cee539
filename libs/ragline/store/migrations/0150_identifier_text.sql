-- Identifier lookup text (issue 20; retrieval/specificity.py, retrieval/ident_match.py).
-- The corpus lookup "in how many documents does IFIT-1 occur" must decide exactly as
-- ident_match.matches does in Python: NFKC, full case folding, and words split into
-- letter and digit runs the way Python's re splits them ([^\W_]). Computing that per query
-- over every chunk the caller sees (normalize() costs ~10x lower()) would run into the
-- lookup's statement timeout, so each child chunk carries it, filled by a trigger:
--
--   ident_text = ' ' || <title ' ' contextual_header ' ' text, folded, every run of
--                 characters that are neither letter nor digit replaced by one space> || ' '
--
-- and the lookup is a small regular expression over it (' ifit ?1 ': specificity.py).
-- The fold is PostgreSQL's own (normalize NFKC, then casefold under the builtin
-- pg_unicode_fast collation: full case folding, independent of the database's locale),
-- which equals Python's unicodedata NFKC + str.casefold for every code point Python
-- knows (checked exhaustively against the real server:
-- tests/integration/query/test_identifier_text.py). Two differences are removed here:
--   * code points unassigned in Python's Unicode (14.0.0) are replaced by a space first:
--     PostgreSQL 18 knows Unicode 16 and folds some of them (U+1CCD6 OUTLINED LATIN
--     CAPITAL LETTER A -> 'a'), where Python keeps a separator;
--   * "letter or digit" is spelled out as code point ranges (Python's [^\W_], Unicode
--     14.0.0), not [[:alnum:]], which follows the collation (ASCII only under C; Unicode
--     Alphabetic, with combining marks, elsewhere).
-- Pure-ASCII text takes a shortcut (its fold is lower()). The two range lists are
-- generated from the running Python (tests/integration/query/test_identifier_text.py,
-- `unicode_classes()`); when Python's Unicode version changes that test fails and a new
-- migration replaces the function (and refills the column).
--
-- Additive: a nullable column, a function and a trigger; the previous release neither
-- reads nor writes the column (the trigger fills it for its inserts too). Rows this
-- migration cannot update (a migration role under the chunks' FORCE ROW LEVEL SECURITY
-- sees none) stay NULL and are folded on the fly by the lookup (coalesce), slower only.
CREATE OR REPLACE FUNCTION ragline_ident_text(title text, header text, body text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT ' ' || CASE
        WHEN octet_length(r) = char_length(r)
            THEN regexp_replace(lower(r COLLATE pg_unicode_fast), '[^0-9a-z]+', ' ', 'g')
        ELSE regexp_replace(
            casefold(normalize(regexp_replace(r,
                '['
                '\u0378-\u0379\u0380-\u0383\u038b\u038d\u03a2\u0530\u0557-\u0558\u058b-\u058c\u0590'
                '\u05c8-\u05cf\u05eb-\u05ee\u05f5-\u05ff\u070e\u074b-\u074c\u07b2-\u07bf\u07fb-\u07fc'
                '\u082e-\u082f\u083f\u085c-\u085d\u085f\u086b-\u086f\u088f\u0892-\u0897\u0984'
                '\u098d-\u098e\u0991-\u0992\u09a9\u09b1\u09b3-\u09b5\u09ba-\u09bb\u09c5-\u09c6'
                '\u09c9-\u09ca\u09cf-\u09d6\u09d8-\u09db\u09de\u09e4-\u09e5\u09ff-\u0a00\u0a04'
                '\u0a0b-\u0a0e\u0a11-\u0a12\u0a29\u0a31\u0a34\u0a37\u0a3a-\u0a3b\u0a3d\u0a43-\u0a46'
                '\u0a49-\u0a4a\u0a4e-\u0a50\u0a52-\u0a58\u0a5d\u0a5f-\u0a65\u0a77-\u0a80\u0a84\u0a8e'
                '\u0a92\u0aa9\u0ab1\u0ab4\u0aba-\u0abb\u0ac6\u0aca\u0ace-\u0acf\u0ad1-\u0adf'
                '\u0ae4-\u0ae5\u0af2-\u0af8\u0b00\u0b04\u0b0d-\u0b0e\u0b11-\u0b12\u0b29\u0b31\u0b34'
                '\u0b3a-\u0b3b\u0b45-\u0b46\u0b49-\u0b4a\u0b4e-\u0b54\u0b58-\u0b5b\u0b5e\u0b64-\u0b65'
                '\u0b78-\u0b81\u0b84\u0b8b-\u0b8d\u0b91\u0b96-\u0b98\u0b9b\u0b9d\u0ba0-\u0ba2'
                '\u0ba5-\u0ba7\u0bab-\u0bad\u0bba-\u0bbd\u0bc3-\u0bc5\u0bc9\u0bce-\u0bcf\u0bd1-\u0bd6'
                '\u0bd8-\u0be5\u0bfb-\u0bff\u0c0d\u0c11\u0c29\u0c3a-\u0c3b\u0c45\u0c49\u0c4e-\u0c54'
                '\u0c57\u0c5b-\u0c5c\u0c5e-\u0c5f\u0c64-\u0c65\u0c70-\u0c76\u0c8d\u0c91\u0ca9\u0cb4'
                '\u0cba-\u0cbb\u0cc5\u0cc9\u0cce-\u0cd4\u0cd7-\u0cdc\u0cdf\u0ce4-\u0ce5\u0cf0'
                '\u0cf3-\u0cff\u0d0d\u0d11\u0d45\u0d49\u0d50-\u0d53\u0d64-\u0d65\u0d80\u0d84'
                '\u0d97-\u0d99\u0db2\u0dbc\u0dbe-\u0dbf\u0dc7-\u0dc9\u0dcb-\u0dce\u0dd5\u0dd7'
                '\u0de0-\u0de5\u0df0-\u0df1\u0df5-\u0e00\u0e3b-\u0e3e\u0e5c-\u0e80\u0e83\u0e85\u0e8b'
                '\u0ea4\u0ea6\u0ebe-\u0ebf\u0ec5\u0ec7\u0ece-\u0ecf\u0eda-\u0edb\u0ee0-\u0eff\u0f48'
                '\u0f6d-\u0f70\u0f98\u0fbd\u0fcd\u0fdb-\u0fff\u10c6\u10c8-\u10cc\u10ce-\u10cf\u1249'
                '\u124e-\u124f\u1257\u1259\u125e-\u125f\u1289\u128e-\u128f\u12b1\u12b6-\u12b7\u12bf'
                '\u12c1\u12c6-\u12c7\u12d7\u1311\u1316-\u1317\u135b-\u135c\u137d-\u137f\u139a-\u139f'
                '\u13f6-\u13f7\u13fe-\u13ff\u169d-\u169f\u16f9-\u16ff\u1716-\u171e\u1737-\u173f'
                '\u1754-\u175f\u176d\u1771\u1774-\u177f\u17de-\u17df\u17ea-\u17ef\u17fa-\u17ff'
                '\u181a-\u181f\u1879-\u187f\u18ab-\u18af\u18f6-\u18ff\u191f\u192c-\u192f\u193c-\u193f'
                '\u1941-\u1943\u196e-\u196f\u1975-\u197f\u19ac-\u19af\u19ca-\u19cf\u19db-\u19dd'
                '\u1a1c-\u1a1d\u1a5f\u1a7d-\u1a7e\u1a8a-\u1a8f\u1a9a-\u1a9f\u1aae-\u1aaf\u1acf-\u1aff'
                '\u1b4d-\u1b4f\u1b7f\u1bf4-\u1bfb\u1c38-\u1c3a\u1c4a-\u1c4c\u1c89-\u1c8f\u1cbb-\u1cbc'
                '\u1cc8-\u1ccf\u1cfb-\u1cff\u1f16-\u1f17\u1f1e-\u1f1f\u1f46-\u1f47\u1f4e-\u1f4f\u1f58'
                '\u1f5a\u1f5c\u1f5e\u1f7e-\u1f7f\u1fb5\u1fc5\u1fd4-\u1fd5\u1fdc\u1ff0-\u1ff1\u1ff5'
                '\u1fff\u2065\u2072-\u2073\u208f\u209d-\u209f\u20c1-\u20cf\u20f1-\u20ff\u218c-\u218f'
                '\u2427-\u243f\u244b-\u245f\u2b74-\u2b75\u2b96\u2cf4-\u2cf8\u2d26\u2d28-\u2d2c'
                '\u2d2e-\u2d2f\u2d68-\u2d6e\u2d71-\u2d7e\u2d97-\u2d9f\u2da7\u2daf\u2db7\u2dbf\u2dc7'
                '\u2dcf\u2dd7\u2ddf\u2e5e-\u2e7f\u2e9a\u2ef4-\u2eff\u2fd6-\u2fef\u2ffc-\u2fff\u3040'
                '\u3097-\u3098\u3100-\u3104\u3130\u318f\u31e4-\u31ef\u321f\ua48d-\ua48f\ua4c7-\ua4cf'
                '\ua62c-\ua63f\ua6f8-\ua6ff\ua7cb-\ua7cf\ua7d2\ua7d4\ua7da-\ua7f1\ua82d-\ua82f'
                '\ua83a-\ua83f\ua878-\ua87f\ua8c6-\ua8cd\ua8da-\ua8df\ua954-\ua95e\ua97d-\ua97f\ua9ce'
                '\ua9da-\ua9dd\ua9ff\uaa37-\uaa3f\uaa4e-\uaa4f\uaa5a-\uaa5b\uaac3-\uaada\uaaf7-\uab00'
                '\uab07-\uab08\uab0f-\uab10\uab17-\uab1f\uab27\uab2f\uab6c-\uab6f\uabee-\uabef'
                '\uabfa-\uabff\ud7a4-\ud7af\ud7c7-\ud7ca\ud7fc-\ud7ff\ufa6e-\ufa6f\ufada-\ufaff'
                '\ufb07-\ufb12\ufb18-\ufb1c\ufb37\ufb3d\ufb3f\ufb42\ufb45\ufbc3-\ufbd2\ufd90-\ufd91'
                '\ufdc8-\ufdce\ufdd0-\ufdef\ufe1a-\ufe1f\ufe53\ufe67\ufe6c-\ufe6f\ufe75\ufefd-\ufefe'
                '\uff00\uffbf-\uffc1\uffc8-\uffc9\uffd0-\uffd1\uffd8-\uffd9\uffdd-\uffdf\uffe7'
                '\uffef-\ufff8\ufffe-\uffff\U0001000c\U00010027\U0001003b\U0001003e'
                '\U0001004e-\U0001004f\U0001005e-\U0001007f\U000100fb-\U000100ff\U00010103-\U00010106'
                '\U00010134-\U00010136\U0001018f\U0001019d-\U0001019f\U000101a1-\U000101cf'
                '\U000101fe-\U0001027f\U0001029d-\U0001029f\U000102d1-\U000102df\U000102fc-\U000102ff'
                '\U00010324-\U0001032c\U0001034b-\U0001034f\U0001037b-\U0001037f\U0001039e'
                '\U000103c4-\U000103c7\U000103d6-\U000103ff\U0001049e-\U0001049f\U000104aa-\U000104af'
                '\U000104d4-\U000104d7\U000104fc-\U000104ff\U00010528-\U0001052f\U00010564-\U0001056e'
                '\U0001057b\U0001058b\U00010593\U00010596\U000105a2\U000105b2\U000105ba'
                '\U000105bd-\U000105ff\U00010737-\U0001073f\U00010756-\U0001075f\U00010768-\U0001077f'
                '\U00010786\U000107b1\U000107bb-\U000107ff\U00010806-\U00010807\U00010809\U00010836'
                '\U00010839-\U0001083b\U0001083d-\U0001083e\U00010856\U0001089f-\U000108a6'
                '\U000108b0-\U000108df\U000108f3\U000108f6-\U000108fa\U0001091c-\U0001091e'
                '\U0001093a-\U0001093e\U00010940-\U0001097f\U000109b8-\U000109bb\U000109d0-\U000109d1'
                '\U00010a04\U00010a07-\U00010a0b\U00010a14\U00010a18\U00010a36-\U00010a37'
                '\U00010a3b-\U00010a3e\U00010a49-\U00010a4f\U00010a59-\U00010a5f\U00010aa0-\U00010abf'
                '\U00010ae7-\U00010aea\U00010af7-\U00010aff\U00010b36-\U00010b38\U00010b56-\U00010b57'
                '\U00010b73-\U00010b77\U00010b92-\U00010b98\U00010b9d-\U00010ba8\U00010bb0-\U00010bff'
                '\U00010c49-\U00010c7f\U00010cb3-\U00010cbf\U00010cf3-\U00010cf9\U00010d28-\U00010d2f'
                '\U00010d3a-\U00010e5f\U00010e7f\U00010eaa\U00010eae-\U00010eaf\U00010eb2-\U00010eff'
                '\U00010f28-\U00010f2f\U00010f5a-\U00010f6f\U00010f8a-\U00010faf\U00010fcc-\U00010fdf'
                '\U00010ff7-\U00010fff\U0001104e-\U00011051\U00011076-\U0001107e\U000110c3-\U000110cc'
                '\U000110ce-\U000110cf\U000110e9-\U000110ef\U000110fa-\U000110ff\U00011135'
                '\U00011148-\U0001114f\U00011177-\U0001117f\U000111e0\U000111f5-\U000111ff\U00011212'
                '\U0001123f-\U0001127f\U00011287\U00011289\U0001128e\U0001129e\U000112aa-\U000112af'
                '\U000112eb-\U000112ef\U000112fa-\U000112ff\U00011304\U0001130d-\U0001130e'
                '\U00011311-\U00011312\U00011329\U00011331\U00011334\U0001133a\U00011345-\U00011346'
                '\U00011349-\U0001134a\U0001134e-\U0001134f\U00011351-\U00011356\U00011358-\U0001135c'
                '\U00011364-\U00011365\U0001136d-\U0001136f\U00011375-\U000113ff\U0001145c'
                '\U00011462-\U0001147f\U000114c8-\U000114cf\U000114da-\U0001157f\U000115b6-\U000115b7'
                '\U000115de-\U000115ff\U00011645-\U0001164f\U0001165a-\U0001165f\U0001166d-\U0001167f'
                '\U000116ba-\U000116bf\U000116ca-\U000116ff\U0001171b-\U0001171c\U0001172c-\U0001172f'
                '\U00011747-\U000117ff\U0001183c-\U0001189f\U000118f3-\U000118fe\U00011907-\U00011908'
                '\U0001190a-\U0001190b\U00011914\U00011917\U00011936\U00011939-\U0001193a'
                '\U00011947-\U0001194f\U0001195a-\U0001199f\U000119a8-\U000119a9\U000119d8-\U000119d9'
                '\U000119e5-\U000119ff\U00011a48-\U00011a4f\U00011aa3-\U00011aaf\U00011af9-\U00011bff'
                '\U00011c09\U00011c37\U00011c46-\U00011c4f\U00011c6d-\U00011c6f\U00011c90-\U00011c91'
                '\U00011ca8\U00011cb7-\U00011cff\U00011d07\U00011d0a\U00011d37-\U00011d39\U00011d3b'
                '\U00011d3e\U00011d48-\U00011d4f\U00011d5a-\U00011d5f\U00011d66\U00011d69\U00011d8f'
                '\U00011d92\U00011d99-\U00011d9f\U00011daa-\U00011edf\U00011ef9-\U00011faf'
                '\U00011fb1-\U00011fbf\U00011ff2-\U00011ffe\U0001239a-\U000123ff\U0001246f'
                '\U00012475-\U0001247f\U00012544-\U00012f8f\U00012ff3-\U00012fff\U0001342f'
                '\U00013439-\U000143ff\U00014647-\U000167ff\U00016a39-\U00016a3f\U00016a5f'
                '\U00016a6a-\U00016a6d\U00016abf\U00016aca-\U00016acf\U00016aee-\U00016aef'
                '\U00016af6-\U00016aff\U00016b46-\U00016b4f\U00016b5a\U00016b62\U00016b78-\U00016b7c'
                '\U00016b90-\U00016e3f\U00016e9b-\U00016eff\U00016f4b-\U00016f4e\U00016f88-\U00016f8e'
                '\U00016fa0-\U00016fdf\U00016fe5-\U00016fef\U00016ff2-\U00016fff\U000187f8-\U000187ff'
                '\U00018cd6-\U00018cff\U00018d09-\U0001afef\U0001aff4\U0001affc\U0001afff'
                '\U0001b123-\U0001b14f\U0001b153-\U0001b163\U0001b168-\U0001b16f\U0001b2fc-\U0001bbff'
                '\U0001bc6b-\U0001bc6f\U0001bc7d-\U0001bc7f\U0001bc89-\U0001bc8f\U0001bc9a-\U0001bc9b'
                '\U0001bca4-\U0001ceff\U0001cf2e-\U0001cf2f\U0001cf47-\U0001cf4f\U0001cfc4-\U0001cfff'
                '\U0001d0f6-\U0001d0ff\U0001d127-\U0001d128\U0001d1eb-\U0001d1ff\U0001d246-\U0001d2df'
                '\U0001d2f4-\U0001d2ff\U0001d357-\U0001d35f\U0001d379-\U0001d3ff\U0001d455\U0001d49d'
                '\U0001d4a0-\U0001d4a1\U0001d4a3-\U0001d4a4\U0001d4a7-\U0001d4a8\U0001d4ad\U0001d4ba'
                '\U0001d4bc\U0001d4c4\U0001d506\U0001d50b-\U0001d50c\U0001d515\U0001d51d\U0001d53a'
                '\U0001d53f\U0001d545\U0001d547-\U0001d549\U0001d551\U0001d6a6-\U0001d6a7'
                '\U0001d7cc-\U0001d7cd\U0001da8c-\U0001da9a\U0001daa0\U0001dab0-\U0001deff'
                '\U0001df1f-\U0001dfff\U0001e007\U0001e019-\U0001e01a\U0001e022\U0001e025'
                '\U0001e02b-\U0001e0ff\U0001e12d-\U0001e12f\U0001e13e-\U0001e13f\U0001e14a-\U0001e14d'
                '\U0001e150-\U0001e28f\U0001e2af-\U0001e2bf\U0001e2fa-\U0001e2fe\U0001e300-\U0001e7df'
                '\U0001e7e7\U0001e7ec\U0001e7ef\U0001e7ff\U0001e8c5-\U0001e8c6\U0001e8d7-\U0001e8ff'
                '\U0001e94c-\U0001e94f\U0001e95a-\U0001e95d\U0001e960-\U0001ec70\U0001ecb5-\U0001ed00'
                '\U0001ed3e-\U0001edff\U0001ee04\U0001ee20\U0001ee23\U0001ee25-\U0001ee26\U0001ee28'
                '\U0001ee33\U0001ee38\U0001ee3a\U0001ee3c-\U0001ee41\U0001ee43-\U0001ee46\U0001ee48'
                '\U0001ee4a\U0001ee4c\U0001ee50\U0001ee53\U0001ee55-\U0001ee56\U0001ee58\U0001ee5a'
                '\U0001ee5c\U0001ee5e\U0001ee60\U0001ee63\U0001ee65-\U0001ee66\U0001ee6b\U0001ee73'
                '\U0001ee78\U0001ee7d\U0001ee7f\U0001ee8a\U0001ee9c-\U0001eea0\U0001eea4\U0001eeaa'
                '\U0001eebc-\U0001eeef\U0001eef2-\U0001efff\U0001f02c-\U0001f02f\U0001f094-\U0001f09f'
                '\U0001f0af-\U0001f0b0\U0001f0c0\U0001f0d0\U0001f0f6-\U0001f0ff\U0001f1ae-\U0001f1e5'
                '\U0001f203-\U0001f20f\U0001f23c-\U0001f23f\U0001f249-\U0001f24f\U0001f252-\U0001f25f'
                '\U0001f266-\U0001f2ff\U0001f6d8-\U0001f6dc\U0001f6ed-\U0001f6ef\U0001f6fd-\U0001f6ff'
                '\U0001f774-\U0001f77f\U0001f7d9-\U0001f7df\U0001f7ec-\U0001f7ef\U0001f7f1-\U0001f7ff'
                '\U0001f80c-\U0001f80f\U0001f848-\U0001f84f\U0001f85a-\U0001f85f\U0001f888-\U0001f88f'
                '\U0001f8ae-\U0001f8af\U0001f8b2-\U0001f8ff\U0001fa54-\U0001fa5f\U0001fa6e-\U0001fa6f'
                '\U0001fa75-\U0001fa77\U0001fa7d-\U0001fa7f\U0001fa87-\U0001fa8f\U0001faad-\U0001faaf'
                '\U0001fabb-\U0001fabf\U0001fac6-\U0001facf\U0001fada-\U0001fadf\U0001fae8-\U0001faef'
                '\U0001faf7-\U0001faff\U0001fb93\U0001fbcb-\U0001fbef\U0001fbfa-\U0001ffff'
                '\U0002a6e0-\U0002a6ff\U0002b739-\U0002b73f\U0002b81e-\U0002b81f\U0002cea2-\U0002ceaf'
                '\U0002ebe1-\U0002f7ff\U0002fa1e-\U0002ffff\U0003134b-\U000e0000\U000e0002-\U000e001f'
                '\U000e0080-\U000e00ff\U000e01f0-\U000effff\U000ffffe-\U000fffff\U0010fffe-\U0010ffff'
                ']', ' ', 'g'), NFKC) COLLATE pg_unicode_fast),
            '[^'
            '\u0030-\u0039\u0041-\u005a\u0061-\u007a\u00aa\u00b2-\u00b3\u00b5\u00b9-\u00ba'
            '\u00bc-\u00be\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02c1\u02c6-\u02d1\u02e0-\u02e4\u02ec'
            '\u02ee\u0370-\u0374\u0376-\u037d\u037f\u0386\u0388-\u03f5\u03f7-\u0481\u048a-\u0559'
            '\u0560-\u0588\u05d0-\u05f2\u0620-\u064a\u0660-\u0669\u066e-\u066f\u0671-\u06d3\u06d5'
            '\u06e5-\u06e6\u06ee-\u06fc\u06ff\u0710\u0712-\u072f\u074d-\u07a5\u07b1-\u07ea'
            '\u07f4-\u07f5\u07fa\u0800-\u0815\u081a\u0824\u0828\u0840-\u0858\u0860-\u0887'
            '\u0889-\u088e\u08a0-\u08c9\u0904-\u0939\u093d\u0950\u0958-\u0961\u0966-\u096f'
            '\u0971-\u0980\u0985-\u09b9\u09bd\u09ce\u09dc-\u09e1\u09e6-\u09f1\u09f4-\u09f9\u09fc'
            '\u0a05-\u0a39\u0a59-\u0a6f\u0a72-\u0a74\u0a85-\u0ab9\u0abd\u0ad0-\u0ae1\u0ae6-\u0aef'
            '\u0af9\u0b05-\u0b39\u0b3d\u0b5c-\u0b61\u0b66-\u0b6f\u0b71-\u0b77\u0b83-\u0bb9\u0bd0'
            '\u0be6-\u0bf2\u0c05-\u0c39\u0c3d\u0c58-\u0c61\u0c66-\u0c6f\u0c78-\u0c7e\u0c80'
            '\u0c85-\u0cb9\u0cbd\u0cdd-\u0ce1\u0ce6-\u0cf2\u0d04-\u0d3a\u0d3d\u0d4e\u0d54-\u0d56'
            '\u0d58-\u0d61\u0d66-\u0d78\u0d7a-\u0d7f\u0d85-\u0dc6\u0de6-\u0def\u0e01-\u0e30'
            '\u0e32-\u0e33\u0e40-\u0e46\u0e50-\u0e59\u0e81-\u0eb0\u0eb2-\u0eb3\u0ebd-\u0ec6'
            '\u0ed0-\u0f00\u0f20-\u0f33\u0f40-\u0f6c\u0f88-\u0f8c\u1000-\u102a\u103f-\u1049'
            '\u1050-\u1055\u105a-\u105d\u1061\u1065-\u1066\u106e-\u1070\u1075-\u1081\u108e'
            '\u1090-\u1099\u10a0-\u10fa\u10fc-\u135a\u1369-\u138f\u13a0-\u13fd\u1401-\u166c'
            '\u166f-\u167f\u1681-\u169a\u16a0-\u16ea\u16ee-\u1711\u171f-\u1731\u1740-\u1751'
            '\u1760-\u1770\u1780-\u17b3\u17d7\u17dc\u17e0-\u17f9\u1810-\u1884\u1887-\u18a8'
            '\u18aa-\u191e\u1946-\u19da\u1a00-\u1a16\u1a20-\u1a54\u1a80-\u1a99\u1aa7\u1b05-\u1b33'
            '\u1b45-\u1b59\u1b83-\u1ba0\u1bae-\u1be5\u1c00-\u1c23\u1c40-\u1c7d\u1c80-\u1cbf'
            '\u1ce9-\u1cec\u1cee-\u1cf3\u1cf5-\u1cf6\u1cfa-\u1dbf\u1e00-\u1fbc\u1fbe\u1fc2-\u1fcc'
            '\u1fd0-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ffc\u2070-\u2079\u207f-\u2089\u2090-\u209c\u2102'
            '\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2139'
            '\u213c-\u213f\u2145-\u2149\u214e\u2150-\u2189\u2460-\u249b\u24ea-\u24ff\u2776-\u2793'
            '\u2c00-\u2ce4\u2ceb-\u2cee\u2cf2-\u2cf3\u2cfd\u2d00-\u2d6f\u2d80-\u2dde\u2e2f'
            '\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c\u3041-\u3096\u309d-\u309f'
            '\u30a1-\u30fa\u30fc-\u318e\u3192-\u3195\u31a0-\u31bf\u31f0-\u31ff\u3220-\u3229'
            '\u3248-\u324f\u3251-\u325f\u3280-\u3289\u32b1-\u32bf\u3400-\u4dbf\u4e00-\ua48c'
            '\ua4d0-\ua4fd\ua500-\ua60c\ua610-\ua66e\ua67f-\ua69d\ua6a0-\ua6ef\ua717-\ua71f'
            '\ua722-\ua788\ua78b-\ua801\ua803-\ua805\ua807-\ua80a\ua80c-\ua822\ua830-\ua835'
            '\ua840-\ua873\ua882-\ua8b3\ua8d0-\ua8d9\ua8f2-\ua8f7\ua8fb\ua8fd-\ua8fe\ua900-\ua925'
            '\ua930-\ua946\ua960-\ua97c\ua984-\ua9b2\ua9cf-\ua9d9\ua9e0-\ua9e4\ua9e6-\uaa28'
            '\uaa40-\uaa42\uaa44-\uaa4b\uaa50-\uaa59\uaa60-\uaa76\uaa7a\uaa7e-\uaaaf\uaab1'
            '\uaab5-\uaab6\uaab9-\uaabd\uaac0\uaac2-\uaadd\uaae0-\uaaea\uaaf2-\uaaf4\uab01-\uab5a'
            '\uab5c-\uab69\uab70-\uabe2\uabf0-\ud7fb\uf900-\ufb1d\ufb1f-\ufb28\ufb2a-\ufbb1'
            '\ufbd3-\ufd3d\ufd50-\ufdc7\ufdf0-\ufdfb\ufe70-\ufefc\uff10-\uff19\uff21-\uff3a'
            '\uff41-\uff5a\uff66-\uffdc\U00010000-\U000100fa\U00010107-\U00010133'
            '\U00010140-\U00010178\U0001018a-\U0001018b\U00010280-\U000102d0\U000102e1-\U00010375'
            '\U00010380-\U0001039d\U000103a0-\U000103cf\U000103d1-\U00010563\U00010570-\U00010855'
            '\U00010858-\U00010876\U00010879-\U0001091b\U00010920-\U00010939\U00010980-\U00010a00'
            '\U00010a10-\U00010a35\U00010a40-\U00010a48\U00010a60-\U00010a7e\U00010a80-\U00010ac7'
            '\U00010ac9-\U00010ae4\U00010aeb-\U00010aef\U00010b00-\U00010b35\U00010b40-\U00010b91'
            '\U00010ba9-\U00010d23\U00010d30-\U00010ea9\U00010eb0-\U00010f45\U00010f51-\U00010f54'
            '\U00010f70-\U00010f81\U00010fb0-\U00010ff6\U00011003-\U00011037\U00011052-\U0001106f'
            '\U00011071-\U00011072\U00011075\U00011083-\U000110af\U000110d0-\U000110f9'
            '\U00011103-\U00011126\U00011136-\U0001113f\U00011144\U00011147-\U00011172\U00011176'
            '\U00011183-\U000111b2\U000111c1-\U000111c4\U000111d0-\U000111da\U000111dc'
            '\U000111e1-\U0001122b\U00011280-\U000112a8\U000112b0-\U000112de\U000112f0-\U000112f9'
            '\U00011305-\U00011339\U0001133d\U00011350\U0001135d-\U00011361\U00011400-\U00011434'
            '\U00011447-\U0001144a\U00011450-\U00011459\U0001145f-\U000114af\U000114c4-\U000114c5'
            '\U000114c7-\U000115ae\U000115d8-\U000115db\U00011600-\U0001162f\U00011644-\U00011659'
            '\U00011680-\U000116aa\U000116b8\U000116c0-\U0001171a\U00011730-\U0001173b'
            '\U00011740-\U0001182b\U000118a0-\U0001192f\U0001193f\U00011941\U00011950-\U000119d0'
            '\U000119e1\U000119e3\U00011a00\U00011a0b-\U00011a32\U00011a3a\U00011a50'
            '\U00011a5c-\U00011a89\U00011a9d\U00011ab0-\U00011c2e\U00011c40\U00011c50-\U00011c6c'
            '\U00011c72-\U00011c8f\U00011d00-\U00011d30\U00011d46\U00011d50-\U00011d89'
            '\U00011d98-\U00011ef2\U00011fb0-\U00011fd4\U00012000-\U0001246e\U00012480-\U00012ff0'
            '\U00013000-\U0001342e\U00014400-\U00016a69\U00016a70-\U00016aed\U00016b00-\U00016b2f'
            '\U00016b40-\U00016b43\U00016b50-\U00016e96\U00016f00-\U00016f4a\U00016f50'
            '\U00016f93-\U00016fe1\U00016fe3\U00017000-\U0001bc99\U0001d2e0-\U0001d2f3'
            '\U0001d360-\U0001d6c0\U0001d6c2-\U0001d6da\U0001d6dc-\U0001d6fa\U0001d6fc-\U0001d714'
            '\U0001d716-\U0001d734\U0001d736-\U0001d74e\U0001d750-\U0001d76e\U0001d770-\U0001d788'
            '\U0001d78a-\U0001d7a8\U0001d7aa-\U0001d7c2\U0001d7c4-\U0001d7ff\U0001df00-\U0001df1e'
            '\U0001e100-\U0001e12c\U0001e137-\U0001e14e\U0001e290-\U0001e2ad\U0001e2c0-\U0001e2eb'
            '\U0001e2f0-\U0001e2f9\U0001e7e0-\U0001e8cf\U0001e900-\U0001e943\U0001e94b-\U0001e959'
            '\U0001ec71-\U0001ecab\U0001ecad-\U0001ecaf\U0001ecb1-\U0001ed2d\U0001ed2f-\U0001eebb'
            '\U0001f100-\U0001f10c\U0001fbf0-\U0003134a'
            ']+', ' ', 'g')
    END || ' '
    FROM (SELECT coalesce(title, '') || ' ' || coalesce(header, '') || ' ' || coalesce(body, '')
          AS r) AS raw
$fn$;

ALTER TABLE chunks ADD COLUMN IF NOT EXISTS ident_text text;

CREATE OR REPLACE FUNCTION chunks_ident_text() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.ident_text := CASE WHEN NEW.level = 'child'
        THEN ragline_ident_text(NEW.title, NEW.contextual_header, NEW.text) END;
    RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER chunks_ident_text BEFORE INSERT OR UPDATE OF title, contextual_header, text, level
    ON chunks FOR EACH ROW EXECUTE FUNCTION chunks_ident_text();

UPDATE chunks SET ident_text = ragline_ident_text(title, contextual_header, text)
    WHERE level = 'child' AND ident_text IS NULL;

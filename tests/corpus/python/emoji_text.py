# emoji: turn emoji into names and back, count them in a chat message.
import emoji

msg = 'Great job 👍 see you 🎉🎉'
assert emoji.demojize(msg) == 'Great job :thumbs_up: see you :party_popper::party_popper:'
assert emoji.emojize('Ship it :rocket:') == 'Ship it 🚀'
assert emoji.emoji_count(msg) == 3
assert emoji.replace_emoji(msg, replace='') == 'Great job  see you '
print(emoji.demojize('👍'))
print('CORPUS-OK emoji_text')

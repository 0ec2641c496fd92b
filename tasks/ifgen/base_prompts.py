"""Natural base requests for generated instruction-following rows: writing tasks on topics.

A base prompt is a writing task (a genre, in this module's own wording) about one topic. Each
topic names the words an answer about it uses ("volcanoes" -> volcano, lava, eruption), which
``content:addresses_prompt`` checks; each genre names the shortest answer that still does the
task. None of this text comes from IFEval or IFBench (``tests/tasks/test_ifgen.py`` checks it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Genre:
    template: str  # "{topic}" is replaced by the topic's phrase
    min_words: int  # the floor below which an answer does not do the task


@dataclass(frozen=True)
class Topic:
    phrase: str
    words: tuple[str, ...]  # an on-topic answer uses one (matched as a word prefix, any case)


GENRES: tuple[Genre, ...] = (
    Genre("Write a short blog post about {topic}.", 40),
    Genre("Explain {topic} to a curious twelve-year-old.", 30),
    Genre("Describe {topic} for a visitor who has never heard of it.", 30),
    Genre("Write an email to a friend telling them what you learned about {topic}.", 30),
    Genre("Give three practical tips related to {topic}.", 25),
    Genre("Write a brief newspaper article on {topic}.", 40),
    Genre("Write a poem about {topic}.", 20),
    Genre("Compose a speech for a school assembly on {topic}.", 40),
    Genre("What are the advantages and disadvantages of {topic}?", 30),
    Genre("Write a diary entry from someone who spent the day thinking about {topic}.", 30),
    Genre("Summarize what everyone should know about {topic}.", 30),
    Genre("Write a product pitch for a new book on {topic}.", 25),
    Genre("Tell a short story in which {topic} plays a central part.", 40),
    Genre("Write a letter to a local newspaper editor about {topic}.", 35),
    Genre("Prepare study notes on {topic} for a classmate.", 30),
    Genre("Why does {topic} matter to ordinary people? Answer in a short essay.", 40),
    Genre("Write a review of an imaginary museum exhibition on {topic}.", 35),
    Genre("Draft an announcement for a community talk about {topic}.", 25),
    Genre("Write a dialogue between two friends arguing about {topic}.", 35),
    Genre("Describe a typical day for a person whose job involves {topic}.", 35),
)

_TOPICS = """
volcanoes|volcan,lava,erupt,magma
honeybees|bee,hive,honey,pollen
the history of the bicycle|bicycl,bike,cycl,wheel
learning a second language|language,vocabular,grammar,speak
rainforests|forest,tree,rain,jungle
the moon landing|moon,apollo,astronaut,lunar
composting at home|compost,soil,waste,garden
public libraries|librar,book,read
the water cycle|water,rain,evaporat,cloud
sleep and health|sleep,rest,bed,health
coral reefs|coral,reef,ocean,sea
the invention of the printing press|print,press,gutenberg,book
electric cars|electric,car,batter,vehicle
urban gardening|garden,plant,urban,city
chess|chess,king,pawn,board,game
the importance of breakfast|breakfast,meal,morning,food
recycling plastic|recycl,plastic,waste
bird migration|bird,migrat,flight,fly
the Great Wall of China|wall,china,chinese
volunteering|volunteer,help,communit
solar power|solar,sun,energy,panel
ancient Egypt|egypt,pharaoh,pyramid,nile
learning to cook|cook,kitchen,recipe,food
the human heart|heart,blood,pump
earthquakes|earthquake,quake,tremor,fault
owning a dog|dog,pet,puppy
the Olympic Games|olymp,athlet,games,sport
saving money|money,sav,budget
the deep ocean|ocean,sea,deep,water
friendship|friend
snowflakes|snow,flake,ice,crystal
the first computers|computer,machine,calculat
tea|tea
desert animals|desert,animal,camel,sand
the Amazon river|amazon,river
mountain climbing|mountain,climb,summit,peak
jazz music|jazz,music
the life of a butterfly|butterfl,caterpillar,wing
public transport|transport,bus,train,commut
photosynthesis|photosynth,plant,light,leaf,leaves
running a marathon|marathon,run,race
the invention of the telephone|telephone,phone,call
weather forecasting|weather,forecast,rain,storm
homework|homework,school,student
dinosaurs|dinosaur,fossil,extinct
growing tomatoes|tomato,plant,garden
the history of chocolate|chocolate,cocoa,cacao
lighthouses|lighthouse,light,ship,coast
kindness to strangers|kind,stranger
wind turbines|wind,turbine,energy
the night sky|star,sky,night,planet
writing letters by hand|letter,hand,writ,pen
penguins|penguin
the history of money|money,coin,trade,currenc
city parks|park,green,city
rivers and floods|river,flood,water
learning to swim|swim,water,pool
the role of bees in farming|bee,farm,crop,pollinat
board games|game,board,play
traffic jams|traffic,car,road,jam
the invention of the light bulb|light,bulb,edison,electric
healthy eating|eat,food,diet,health
glaciers|glacier,ice
the Roman Empire|roman,rome,empire
street food|food,street,stall
keeping a journal|journal,diary,writ
robots in factories|robot,factor,machine
the life of a tree|tree,root,leaf,leaves,wood
remote work|remote,work,home,office
wolves|wolf,wolves,pack
clean drinking water|water,drink,clean
trains of the nineteenth century|train,rail,steam
meditation|meditat,breath,calm,mind
the history of the calendar|calendar,month,year,day
hot air balloons|balloon,air,fly
caring for houseplants|plant,water,pot,leaf,leaves
the invention of paper|paper
bridges|bridge
why the sky is blue|sky,blue,light
family traditions|famil,tradition
museums|museum,exhibit,art
the moon's phases|moon,phase,lunar
sharks|shark
rainbows|rainbow,light,colo
bread baking|bread,bak,dough,flour
"""
TOPICS: tuple[Topic, ...] = tuple(
    Topic(phrase, tuple(words.split(",")))
    for phrase, words in (line.split("|") for line in _TOPICS.strip().splitlines())
)


def base_prompt(genre: Genre, topic: Topic) -> str:
    return genre.template.format(topic=topic.phrase)
